package backup

import (
	"context"
	"io"
	"os"
	"time"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errVerifyTemp     = "cannot make room for the snapshot to verify"
	errFmtNotSnapshot = "the stored snapshot does not open as an etcd database: %v"
	errFmtEtcdSum     = "the stored snapshot carries etcd checksum %s, its metadata says %s"
	errFmtOldRevision = "the stored snapshot is at revision %d, older than the %d its metadata records"
	errPutVerified    = "cannot record the verification in the backup's metadata"
)

// A Verification is what reading a backup back found.
type Verification struct {
	Time time.Time `json:"time"`
	// Opened says the snapshot was opened as an etcd database (bbolt's consistency check,
	// etcdutl's snapshot status); an encrypted backup, which the provider cannot decrypt,
	// has its stored checksum verified only.
	Opened bool `json:"opened"`
	// Revision, Hash (etcdutl's) and TotalKeys of the database, when opened.
	Revision  int64  `json:"revision,omitempty"`
	Hash      uint32 `json:"hash,omitempty"`
	TotalKeys int    `json:"totalKeys,omitempty"`
}

// Verify reads a backup back from the store: its size and SHA-256 against its metadata, and,
// unless it is encrypted, etcd's checksum and the database itself (opened in a temporary file
// under dir, removed after), whose revision must not be older than the metadata says. It
// records what it found in the metadata and returns it.
func Verify(ctx context.Context, st Store, md Metadata, dir string) (Metadata, error) {
	r, _, err := st.Objects.GetObject(ctx, st.Bucket, md.Key)
	if err != nil {
		return md, errors.Wrap(err, errReadSnapshot)
	}
	defer r.Close() //nolint:errcheck // Read-only.
	stored := newCounted(r)
	v := &Verification{Time: time.Now().UTC(), Opened: !md.Encrypted}
	if md.Encrypted {
		if _, err := io.Copy(io.Discard, stored); err != nil {
			return md, errors.Wrap(err, errReadSnapshot)
		}
	} else if err := openSnapshot(stored, md, dir, v); err != nil {
		return md, err
	}
	if stored.n != md.Size {
		return md, errors.Errorf(errFmtSize, stored.n, md.Size)
	}
	if got := stored.sum(); got != md.SHA256 {
		return md, errors.Errorf(errFmtChecksum, got, md.SHA256)
	}
	md.Verified = v
	b, err := md.encode()
	if err != nil {
		return md, errors.Wrap(err, errEncode)
	}
	return md, errors.Wrap(st.Objects.PutObject(ctx, st.Bucket, MetadataKey(md.Key), b), errPutVerified)
}

// openSnapshot copies a plain snapshot into a temporary file, checking etcd's checksum on the
// way, and reads it as etcdutl snapshot status does.
func openSnapshot(r io.Reader, md Metadata, dir string, v *Verification) error {
	f, err := os.CreateTemp(dir, "verify-*.snapshot")
	if err != nil {
		return errors.Wrap(err, errVerifyTemp)
	}
	defer os.Remove(f.Name()) //nolint:errcheck // Best effort; the name is unique.
	chk := newChecked(r)
	_, err = io.Copy(f, chk)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Wrap(err, errReadSnapshot)
	}
	if chk.digest() != md.SnapshotSHA256 {
		return errors.Errorf(errFmtEtcdSum, chk.digest(), md.SnapshotSHA256)
	}
	status, err := snapshot.NewV3(zap.NewNop()).Status(f.Name())
	if err != nil {
		return errors.Errorf(errFmtNotSnapshot, err)
	}
	if status.Revision < md.Revision {
		return errors.Errorf(errFmtOldRevision, status.Revision, md.Revision)
	}
	v.Revision, v.Hash, v.TotalKeys = status.Revision, status.Hash, status.TotalKey
	return nil
}
