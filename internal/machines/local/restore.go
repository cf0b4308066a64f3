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

	// downloadTimeout bounds the download of one snapshot.
	downloadTimeout = 30 * time.Minute

	errNoEtcdutl      = "there is no etcdutl next to the etcd binary"
	errDownload       = "cannot download the snapshot to restore"
	errFmtDownload    = "cannot download the snapshot to restore: the server answered %s"
	errFmtRestoreSize = "the snapshot to restore has %d bytes, not the %d the provider checked"
	errFmtRestoreSum  = "the snapshot to restore has SHA-256 %s, not the %s the provider checked"
	errIdentity       = "the age identity to decrypt the snapshot with does not parse"
	errDecrypt        = "cannot decrypt the snapshot to restore"
	errFmtEtcdutl     = "etcdutl snapshot restore failed: %s"
	errRestoreFiles   = "cannot prepare the restored data directory"
)

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
	if err := download(ctx, cfg.Restore, snap); err != nil {
		return err
	}
	// Downloaded while the provider checked the backup; nothing starts before it passed.
	if check := cfg.Restore.Checked; check != nil {
		if err := check(ctx); err != nil {
			return err
		}
	}
	args := []string{
		"snapshot", "restore", snap,
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
// checked. The URL is never part of an error: it is a credential while it lasts.
func download(ctx context.Context, src *machines.RestoreSource, path string) error {
	ctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
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
	body := &countingReader{r: io.TeeReader(io.LimitReader(rsp.Body, src.Size+1), h)}
	var plain io.Reader = body
	if src.AgeIdentity != "" {
		ids, err := age.ParseIdentities(strings.NewReader(src.AgeIdentity))
		if err != nil {
			return errors.New(errIdentity)
		}
		if plain, err = age.Decrypt(body, ids...); err != nil {
			return errors.Wrap(err, errDecrypt)
		}
	}
	if _, err := io.Copy(f, plain); err != nil {
		return errors.Wrap(err, errDownload)
	}
	// What decryption left unread counts too.
	if _, err := io.Copy(io.Discard, body); err != nil {
		return errors.Wrap(err, errDownload)
	}
	n := body.n
	if n != src.Size {
		return errors.Errorf(errFmtRestoreSize, n, src.Size)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != src.SHA256 {
		return errors.Errorf(errFmtRestoreSum, sum, src.SHA256)
	}
	return errors.Wrap(f.Close(), errRestoreFiles)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
