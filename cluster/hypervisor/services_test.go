package main

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePorts(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []int
		wantErr bool
	}{
		"None":     {in: ""},
		"Some":     {in: "8080, 7070,", want: []int{8080, 7070}},
		"NotAPort": {in: "8080,http", wantErr: true},
		"TooBig":   {in: "70000", wantErr: true},
		"Zero":     {in: "0", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parsePorts(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want an error: %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want, +got:\n%s", diff)
			}
		})
	}
}

// TestForward: what a client sends reaches the target and the answer comes back, a client
// that half-closes still gets the whole answer, and nothing waits after the context ends.
func TestForward(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close() //nolint:errcheck // Test cleanup.
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close() //nolint:errcheck // Test cleanup.
				req, _ := io.ReadAll(c)
				_, _ = c.Write(append([]byte("echo:"), req...))
			}()
		}
	}()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { forward(ctx, l, target.Addr().String()); close(done) }()

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "echo:hello" {
		t.Errorf("got %q through the forward, want %q", got, "echo:hello")
	}
	_ = c.Close()
	cancel()
	_ = l.Close()
	<-done
}
