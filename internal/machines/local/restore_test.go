package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

// TestDownload: a machine keeps only the bytes the restore source describes; it refuses (a
// RefusedSnapshotError, which makes the provider give up the restore) other bytes and what
// its identity cannot decrypt, and fails without refusing when the transport does (a
// connection cut, an object store that stalls), which the next attempt may get past.
func TestDownload(t *testing.T) {
	snapshot := bytes.Repeat([]byte("etcd snapshot "), 100_000)
	var ids [2]*age.X25519Identity
	for i := range ids {
		var err error
		if ids[i], err = age.GenerateX25519Identity(); err != nil {
			t.Fatal(err)
		}
	}
	id, other := ids[0], ids[1]
	var enc bytes.Buffer
	w, err := age.Encrypt(&enc, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(snapshot); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	encrypted := enc.Bytes()
	tampered := bytes.Clone(snapshot)
	tampered[len(tampered)/2] ^= 1

	// serve answers with body; cut stops after half of it and closes the connection; stall
	// stops after half of it and waits.
	serve := func(body []byte, cut, stall bool) *httptest.Server {
		done := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if !cut && !stall {
				_, _ = w.Write(body)
				return
			}
			w.Header().Set("Content-Length", "999999999")
			_, _ = w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			if stall {
				<-done
				return
			}
			conn, _, _ := w.(http.Hijacker).Hijack()
			_ = conn.Close()
		}))
		t.Cleanup(func() { close(done); srv.CloseClientConnections(); srv.Close() })
		return srv
	}
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

	cases := map[string]struct {
		body       []byte
		cut, stall bool
		size       int64
		sum        string
		identity   string
		want       []byte
		refused    string
		failed     string
	}{
		"TheSnapshot":      {body: snapshot, want: snapshot},
		"Decrypted":        {body: encrypted, size: int64(len(encrypted)), sum: sum(encrypted), identity: id.String(), want: snapshot},
		"Tampered":         {body: tampered, refused: "SHA-256"},
		"Longer":           {body: append(bytes.Clone(snapshot), 'x'), refused: "bytes, not the"},
		"Shorter":          {body: snapshot[:len(snapshot)-1], refused: "bytes, not the"},
		"WrongIdentity":    {body: encrypted, size: int64(len(encrypted)), sum: sum(encrypted), identity: other.String(), refused: errDecrypt},
		"IdentityNotAge":   {body: encrypted, size: int64(len(encrypted)), sum: sum(encrypted), identity: "AGE-SECRET-KEY-1NOTAKEY", refused: errIdentity},
		"ConnectionCut":    {body: snapshot, cut: true, failed: errDownload},
		"EncryptedAndCut":  {body: encrypted, size: int64(len(encrypted)), sum: sum(encrypted), identity: id.String(), cut: true, failed: errDownload},
		"ObjectStoreStall": {body: snapshot, stall: true, failed: errStalled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := serve(tc.body, tc.cut, tc.stall)
			src := &machines.RestoreSource{URL: srv.URL, Size: int64(len(snapshot)), SHA256: sum(snapshot), AgeIdentity: tc.identity}
			if tc.size != 0 {
				src.Size, src.SHA256 = tc.size, tc.sum
			}
			path := filepath.Join(t.TempDir(), "snapshot")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := download(ctx, src, path, 500*time.Millisecond)

			var refused *machines.RefusedSnapshotError
			switch {
			case tc.refused != "":
				if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("download(...): %v, want a refusal with %q", err, tc.refused)
				}
			case tc.failed != "":
				if err == nil || errors.As(err, &refused) || !strings.Contains(err.Error(), tc.failed) {
					t.Fatalf("download(...): %v, want a failure (not a refusal) with %q", err, tc.failed)
				}
			default:
				if err != nil {
					t.Fatalf("download(...): %v", err)
				}
				got, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("downloaded snapshot: -want +got:\n%s", diff)
				}
			}
			if err != nil && (strings.Contains(err.Error(), srv.URL) || strings.Contains(err.Error(), strings.TrimPrefix(id.String(), "AGE-SECRET-KEY-1")[:16])) {
				t.Errorf("the error names the URL or the identity: %v", err)
			}
		})
	}
}
