//go:build integration

package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/google/uuid"

	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
)

// versitygw is the S3 server of these tests (cluster/versitygw.sh); the EtcdCluster tests
// in test/integration run backups on Swift too.
func versitygw(t *testing.T) (*s3.Client, string) {
	t.Helper()
	cfg := s3.Config{Endpoint: os.Getenv("VGW_ENDPOINT"), Region: os.Getenv("VGW_REGION"), AccessKeyID: os.Getenv("VGW_ACCESS_KEY"), SecretAccessKey: os.Getenv("VGW_SECRET_KEY")}
	if cfg.Endpoint == "" {
		t.Fatal("VGW_ENDPOINT is not set: start versitygw with `cluster/versitygw.sh up` and source its env (make test does)")
	}
	c, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bucket := "backup-it-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	ctx := context.Background()
	if err := c.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.EmptyBucket(ctx, bucket)
		_ = c.DeleteBucket(ctx, bucket)
	})
	return c, bucket
}

// stream is a snapshot stream of a database of n bytes, as etcd sends it.
func stream(n int) []byte {
	db := bytes.Repeat([]byte("0123456789abcdef"), n/16)
	sum := sha256.Sum256(db)
	return append(db, sum[:]...)
}

func open(data []byte) func(context.Context) (*etcdclient.Snapshot, error) {
	return func(context.Context) (*etcdclient.Snapshot, error) {
		return &etcdclient.Snapshot{Data: io.NopCloser(bytes.NewReader(data)), MemberID: 0xabc, Revision: 42, Version: "3.6.0"}, nil
	}
}

// nothingLeft checks that the store holds no object and no unfinished upload.
func nothingLeft(t *testing.T, st Store) {
	t.Helper()
	ctx := context.Background()
	objs, err := st.Objects.ListObjects(ctx, st.Bucket, st.Prefix)
	if err != nil || len(objs) != 0 {
		t.Errorf("objects left: %v (%v), want none", objs, err)
	}
	ups, err := st.Objects.ListUploads(ctx, st.Bucket, st.Prefix)
	if err != nil || len(ups) != 0 {
		t.Errorf("unfinished uploads left: %v (%v), want none", ups, err)
	}
}

func TestTakeStoresOnlyWholeSnapshots(t *testing.T) {
	c, bucket := versitygw(t)
	ctx := context.Background()
	st := Store{Objects: c, Bucket: bucket, Prefix: "ns/db/", Owner: uuid.NewString()}
	good := stream(20 << 20) // Three parts of 8 MiB.

	corrupt := bytes.Clone(good)
	corrupt[15<<20] ^= 1
	for name, data := range map[string][]byte{
		"Corrupt":  corrupt,
		"CutShort": good[:17<<20],
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Take(ctx, st, Request{Cluster: "ns/db", Member: "db-0", Open: open(data), Now: time.Now()})
			if err == nil {
				t.Fatal("Take of a bad stream: no error")
			}
			nothingLeft(t, st)
		})
	}

	t.Run("Whole", func(t *testing.T) {
		md, err := Take(ctx, st, Request{Cluster: "ns/db", ClusterID: "c1", Member: "db-0", EtcdVersion: "3.6.16", Open: open(good), Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(good)
		if md.Size != int64(len(good)) || md.Revision != 42 || md.MemberID != "abc" || md.Owner != st.Owner || md.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("metadata %+v does not describe the stream", md)
		}
		if err := Check(ctx, st, md); err != nil {
			t.Errorf("Check of what Take stored: %v", err)
		}
		listed, _, err := List(ctx, st)
		if err != nil || len(listed) != 1 || listed[0].Key != md.Key {
			t.Errorf("List: %v (%v), want the one backup", listed, err)
		}
		// Someone rewrites the object: Check says so.
		if err := c.PutObject(ctx, bucket, md.Key, good[:1024]); err != nil {
			t.Fatal(err)
		}
		if err := Check(ctx, st, md); err == nil || !strings.Contains(err.Error(), "bytes") {
			t.Errorf("Check of a rewritten snapshot: %v, want a size mismatch", err)
		}
	})
}

// A reader that fails: the upload is aborted, whatever part it was at.
type failing struct {
	r   io.Reader
	n   int
	err error
}

func (f *failing) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	n, err := f.r.Read(p[:min(len(p), f.n)])
	f.n -= n
	return n, err
}

func TestUploadStreamAbortsOnError(t *testing.T) {
	c, bucket := versitygw(t)
	ctx := context.Background()
	boom := errors.New("boom")
	_, err := c.UploadStream(ctx, bucket, "p/x", &failing{r: bytes.NewReader(stream(30 << 20)), n: 17 << 20, err: boom}, 8<<20)
	if !errors.Is(err, boom) {
		t.Errorf("UploadStream: %v, want the reader's error", err)
	}
	nothingLeft(t, Store{Objects: c, Bucket: bucket, Prefix: "p/"})

}

func TestPruneKeepsTheNewestAndOnlyTouchesItsOwn(t *testing.T) {
	c, bucket := versitygw(t)
	ctx := context.Background()
	mine := Store{Objects: c, Bucket: bucket, Prefix: "shared/", Owner: uuid.NewString()}
	theirs := Store{Objects: c, Bucket: bucket, Prefix: "shared/", Owner: uuid.NewString()}
	data := stream(64 << 10)
	base := time.Now().Add(-time.Hour)
	var newest Metadata
	for i := range 4 {
		md, err := Take(ctx, mine, Request{Cluster: "a/b", Member: "b-0", Open: open(data), Now: base.Add(time.Duration(i) * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		newest = md
	}
	if _, err := Take(ctx, theirs, Request{Cluster: "x/y", Member: "y-0", Open: open(data), Now: base}); err != nil {
		t.Fatal(err)
	}
	kept, err := Prune(ctx, mine, Policy{KeepLast: 2}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 || kept[0].Key != newest.Key {
		t.Errorf("kept %v, want two, the newest first", keys(kept))
	}
	if got, _, err := List(ctx, mine); err != nil || len(got) != 2 {
		t.Errorf("mine after pruning: %d (%v), want 2", len(got), err)
	}
	if got, _, err := List(ctx, theirs); err != nil || len(got) != 1 {
		t.Errorf("another cluster's backups under the same prefix after pruning: %d (%v), want its 1 untouched", len(got), err)
	}
}

func TestEncryptedBackups(t *testing.T) {
	c, bucket := versitygw(t)
	ctx := context.Background()
	st := Store{Objects: c, Bucket: bucket, Prefix: "enc/", Owner: uuid.NewString()}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	other, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	plain := stream(12 << 20)
	md, err := Take(ctx, st, Request{Cluster: "a/b", Member: "b-0", Open: open(plain), Now: time.Now(), Recipients: []age.Recipient{id.Recipient()}})
	if err != nil {
		t.Fatal(err)
	}
	if !md.Encrypted || md.Size <= int64(len(plain)) {
		t.Errorf("metadata: encrypted %t, %d bytes stored; want encrypted, more than the %d of the snapshot", md.Encrypted, md.Size, len(plain))
	}
	r, _, err := c.GetObject(ctx, bucket, md.Key)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, plain[:4096]) {
		t.Error("the stored object holds the snapshot in the clear")
	}
	if err := Check(ctx, st, md, id); err != nil {
		t.Errorf("Check with the recipient's identity: %v", err)
	}
	if err := Check(ctx, st, md, other); err == nil || !strings.Contains(err.Error(), errDecrypt) {
		t.Errorf("Check with another identity: %v, want %q", err, errDecrypt)
	}
	if err := Check(ctx, st, md); err == nil || !strings.Contains(err.Error(), "is encrypted") {
		t.Errorf("Check without an identity: %v, want it to ask for one", err)
	}

	// A corrupt snapshot is refused before anything encrypted is committed.
	corrupt := bytes.Clone(plain)
	corrupt[100] ^= 1
	if _, err := Take(ctx, st, Request{Cluster: "a/b", Member: "b-0", Open: open(corrupt), Now: time.Now(), Recipients: []age.Recipient{id.Recipient()}}); err == nil {
		t.Error("Take of a corrupt snapshot, encrypted: no error")
	}
	if listed, _, err := List(ctx, st); err != nil || len(listed) != 1 {
		t.Errorf("backups after the corrupt one: %d (%v), want the first only", len(listed), err)
	}
	if ups, err := c.ListUploads(ctx, bucket, st.Prefix); err != nil || len(ups) != 0 {
		t.Errorf("unfinished uploads: %v (%v), want none", ups, err)
	}
}

func TestVerify(t *testing.T) {
	c, bucket := versitygw(t)
	ctx := context.Background()
	st := Store{Objects: c, Bucket: bucket, Prefix: "verify/", Owner: uuid.NewString()}
	// Pages with etcd's checksum, but no database: the checksum passes, opening does not.
	md, err := Take(ctx, st, Request{Cluster: "a/b", Member: "b-0", Open: open(stream(1 << 20)), Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ctx, st, md, t.TempDir()); err == nil || !strings.Contains(err.Error(), "does not open as an etcd database") {
		t.Errorf("Verify of pages that are no database: %v, want it refused", err)
	}
	// An encrypted backup: the stored checksum is what the provider can check.
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := Take(ctx, st, Request{Cluster: "a/b", Member: "b-0", Open: open(stream(1 << 20)), Now: time.Now(), Recipients: []age.Recipient{id.Recipient()}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(ctx, st, enc, t.TempDir())
	if err != nil || got.Verified == nil || got.Verified.Opened {
		t.Fatalf("Verify of an encrypted backup: %+v, %v; want its checksum verified, nothing opened", got.Verified, err)
	}
	again, err := Describe(ctx, st, enc.Key)
	if err != nil || again.Verified == nil {
		t.Errorf("metadata after Verify: %+v, %v; want the verification recorded", again.Verified, err)
	}
	// A changed object does not verify.
	if err := c.PutObject(ctx, bucket, enc.Key, []byte("replaced")); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ctx, st, enc, t.TempDir()); err == nil {
		t.Error("Verify of a replaced object: no error")
	}
}
