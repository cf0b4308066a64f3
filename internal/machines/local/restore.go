package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

const (
	// restoringDir is where etcdutl writes a restored data directory, renamed to dataDir once
	// whole; snapshotFile is the downloaded snapshot, removed after the restore.
	restoringDir = "data.restoring"
	snapshotFile = "restore.snapshot"

	// downloadTimeout bounds the download of one snapshot; stallTimeout is how long it may go
	// without a byte (an object store that stalls, slow or hostile, frees the member's Start
	// long before the reconcile's own timeout).
	downloadTimeout = 30 * time.Minute
	stallTimeout    = time.Minute
	// copyBuffer is the size of the writes to the snapshot file.
	copyBuffer = 1 << 20

	errNoEtcdutl      = "there is no etcdutl next to the etcd binary"
	errDownload       = "cannot download the snapshot to restore"
	errFmtDownload    = "cannot download the snapshot to restore: the server answered %s"
	errFmtRestoreSize = "the snapshot to restore has %d bytes, not the %d its metadata records"
	errFmtRestoreSum  = "the snapshot to restore has SHA-256 %s, not the %s its metadata records: the object was changed or damaged"
	errIdentity       = "the age identity to decrypt the backup with does not parse"
	errDecrypt        = "cannot decrypt the backup with the identity given"
	errStalled        = "the object store stopped sending the snapshot"
	errFmtEtcdutl     = "etcdutl snapshot restore failed: %s"
	errRestoreFiles   = "cannot prepare the restored data directory"
)

// ChecksSnapshots says that a local machine checks the snapshot it restores from (see
// download, and etcdutl's restore checks etcd's own checksum): the provider need not read it
// first.
func (b *Backend) ChecksSnapshots() bool { return true }

// DecryptsSnapshots says that a local machine can be handed a restore's age identity: it
// decrypts in the provider's own process, as the bytes arrive, and keeps nothing.
func (b *Backend) DecryptsSnapshots() bool { return true }

// restore fills a new member's data directory from the snapshot cfg.Restore names: it
// downloads the snapshot into the machine's directory (checking its size and SHA-256 as the
// bytes arrive), has etcdutl of the member's version restore it beside the data directory,
// and renames the result into place. A restore interrupted half way leaves no data directory,
// so that the next Start does it again rather than start a member on half a database.
func (b *Backend) restore(ctx context.Context, dir string, r record, cfg machines.MemberConfig) error {
	bin, err := b.binary(cfg.Version)
	if err != nil {
		return err
	}
	etcdutl := filepath.Join(filepath.Dir(bin), "etcdutl")
	if !isExecutable(etcdutl) {
		return errors.New(errNoEtcdutl)
	}
	snap, restoring := filepath.Join(dir, snapshotFile), filepath.Join(dir, restoringDir)
	defer os.Remove(snap) //nolint:errcheck // Best effort: the next restore overwrites it.
	if err := os.RemoveAll(restoring); err != nil {
		return errors.Wrap(err, errRestoreFiles)
	}
	if err := download(ctx, cfg.Restore, snap, stallTimeout); err != nil {
		return err
	}
	// Downloaded while the provider checked the backup, if it did; nothing starts before
	// that check passed.
	if check := cfg.Restore.Checked; check != nil {
		if err := check(ctx); err != nil {
			return err
		}
	}
	// etcdutl's hash check would read the whole snapshot once more for nothing: its bytes
	// are the ones the backup stored (download checked their SHA-256 against the metadata,
	// and age authenticates what it decrypts), and etcd's own hash of them was checked as
	// they streamed into the backup. etcdutl still strips that hash.
	args := []string{
		"snapshot", "restore", snap, "--skip-hash-check",
		"--name=" + r.Name,
		"--data-dir=" + restoring,
		"--initial-cluster=" + cfg.InitialCluster,
		"--initial-cluster-token=" + cfg.InitialClusterToken,
		"--initial-advertise-peer-urls=" + r.PeerURL,
	}
	if cfg.Restore.BumpRevision > 0 {
		args = append(args, "--bump-revision="+strconv.FormatUint(cfg.Restore.BumpRevision, 10), "--mark-compacted")
	}
	cmd := exec.CommandContext(ctx, etcdutl, args...) //nolint:gosec // etcdutl of BinariesDir, with flags built here.
	cmd.Env = memberEnv(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(restoring)
		return errors.Errorf(errFmtEtcdutl, lastLines(string(out), logTailLines))
	}
	return errors.Wrap(os.Rename(restoring, filepath.Join(dir, dataDir)), errRestoreFiles)
}

// download copies the snapshot at src.URL to path, and checks it is the one the provider
// described, failing when no byte arrives for stallAfter: a snapshot with other bytes, or one the identity does not decrypt, is refused
// (a machines.RefusedSnapshotError). The URL is never part of an error: it is a credential
// while it lasts.
func download(ctx context.Context, src *machines.RestoreSource, path string, stallAfter time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	ctx, stall := context.WithCancelCause(ctx)
	defer stall(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
	if err != nil {
		return errors.New(errDownload)
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return errors.New(errDownload)
	}
	defer rsp.Body.Close() //nolint:errcheck // Read-only.
	if rsp.StatusCode != http.StatusOK {
		return errors.Errorf(errFmtDownload, rsp.Status)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) //nolint:gosec // The machine's own directory.
	if err != nil {
		return errors.Wrap(err, errRestoreFiles)
	}
	defer f.Close() //nolint:errcheck // Closed below when it counts.
	h := sha256.New()
	// One byte more than expected tells a longer object from the right one.
	body := &watchedReader{r: io.TeeReader(io.LimitReader(rsp.Body, src.Size+1), h),
		stall: time.AfterFunc(stallAfter, func() { stall(errors.New(errStalled)) }), after: stallAfter}
	defer body.stall.Stop()
	failed := func(err error) error {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return errors.Wrap(cause, errDownload)
		}
		if body.err != nil {
			return errors.Wrap(body.err, errDownload)
		}
		// The bytes arrived, and decryption refused them.
		return &machines.RefusedSnapshotError{Reason: errors.Wrap(err, errDecrypt)}
	}
	var plain io.Reader = body
	if src.AgeIdentity != "" {
		ids, err := age.ParseIdentities(strings.NewReader(src.AgeIdentity))
		if err != nil {
			return &machines.RefusedSnapshotError{Reason: errors.New(errIdentity)}
		}
		if plain, err = age.Decrypt(body, ids...); err != nil {
			return failed(err)
		}
	}
	// Through a plain Writer, so that the copy uses copyBuffer (os.File's ReadFrom would use
	// 32 KiB).
	if _, err := io.CopyBuffer(struct{ io.Writer }{f}, plain, make([]byte, copyBuffer)); err != nil {
		return failed(err)
	}
	// What decryption left unread counts too.
	if _, err := io.Copy(io.Discard, body); err != nil {
		return failed(err)
	}
	if n := body.n; n != src.Size {
		return &machines.RefusedSnapshotError{Reason: errors.Errorf(errFmtRestoreSize, n, src.Size)}
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != src.SHA256 {
		return &machines.RefusedSnapshotError{Reason: errors.Errorf(errFmtRestoreSum, sum, src.SHA256)}
	}
	return errors.Wrap(f.Close(), errRestoreFiles)
}

// watchedReader counts the bytes read through it, keeps the error of its source (a transport
// failure, as opposed to what a reader on top of it makes of the bytes), and resets stall
// whenever bytes arrive.
type watchedReader struct {
	r     io.Reader
	n     int64
	err   error
	stall *time.Timer
	after time.Duration
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.n += int64(n)
	if n > 0 {
		w.stall.Reset(w.after)
	}
	if err != nil && err != io.EOF {
		w.err = err
	}
	return n, err
}
