package main

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromServer(t *testing.T) {
	for addr, want := range map[string]bool{"198.19.7.10:40000": true, "198.18.0.1:1": true, "127.0.0.1:40000": false, "10.0.0.1:1": false, "[::1]:1": false} {
		if got := fromServer(&net.TCPAddr{IP: net.ParseIP(netipHost(addr)), Port: 1}); got != want {
			t.Errorf("fromServer(%s) = %t, want %t", addr, got, want)
		}
	}
}

func netipHost(hostport string) string {
	h, _, _ := net.SplitHostPort(hostport)
	return h
}

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
// that half-closes still gets the whole answer, a client from an address not allowed gets
// nothing, and nothing waits after the context ends.
func TestForward(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
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
	var refused atomic.Bool
	allow := func(a net.Addr) bool { return !refused.Load() }
	go func() { forward(ctx, l, target.Addr().String(), allow); close(done) }()

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

	refused.Store(true)
	c, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("hello"))
	_ = c.(*net.TCPConn).CloseWrite()
	if got, _ := io.ReadAll(c); len(got) != 0 {
		t.Errorf("a refused client got %q", got)
	}
	_ = c.Close()
	cancel()
	_ = l.Close()
	<-done
}
