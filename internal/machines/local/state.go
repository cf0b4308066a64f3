package local

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

const (
	recordFile = "machine.json"
	pidFile    = "etcd.pid"
	logFile    = "etcd.log"
	dataDir    = "data"
	tlsDir     = "tls"
	lockFile   = ".lock"

	errDecode       = "cannot decode machine.json"
	errEncode       = "cannot encode machine.json"
	errReadDir      = "cannot read the directory of local machines"
	errFmtWriteFile = "cannot write %s"
	errFmtBadName   = "%s %q cannot name a local machine directory: use letters, digits, '.', '_' and '-', starting with a letter or digit"
	errFmtReadEntry = "cannot read local machine %s"
)

// namePattern keeps cluster and machine names usable as single path components: no
// separators, no "..", and no leading dot so that no name collides with Dir/.lock or a
// temporary file.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`)

// record is machine.json. The state is not in it: it is whatever the process is now, and a
// stored one would only go stale.
type record struct {
	Cluster      string    `json:"cluster"`
	Name         string    `json:"name"`
	Address      string    `json:"address"`
	PeerURL      string    `json:"peerURL"`
	ClientURL    string    `json:"clientURL"`
	Version      string    `json:"version,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	CertNotAfter time.Time `json:"certNotAfter,omitzero"`
	// PID, Command and StartedAt are those of the last start; a PID of 0 means never started.
	PID       int       `json:"pid,omitempty"`
	Command   []string  `json:"command,omitempty"`
	StartedAt time.Time `json:"startedAt,omitzero"`
}

func (r record) machine(s machines.State) machines.Machine {
	return machines.Machine{
		Cluster:      r.Cluster,
		Name:         r.Name,
		Address:      r.Address,
		PeerURL:      r.PeerURL,
		ClientURL:    r.ClientURL,
		Version:      r.Version,
		State:        s,
		CreatedAt:    r.CreatedAt,
		CertNotAfter: r.CertNotAfter,
	}
}

func checkName(what, s string) error {
	if !namePattern.MatchString(s) || s == "." || s == ".." {
		return errors.Errorf(errFmtBadName, what, s)
	}
	return nil
}

func checkNames(cluster, name string) error {
	if err := checkName("cluster", cluster); err != nil {
		return err
	}
	return checkName("machine name", name)
}

// readRecord reads dir/machine.json; a missing one is an error that satisfies
// errors.Is(err, fs.ErrNotExist).
func readRecord(dir string) (record, error) {
	b, err := os.ReadFile(filepath.Join(dir, recordFile)) //nolint:gosec // A path under the backend's own directory.
	if err != nil {
		return record{}, err
	}
	r := record{}
	return r, errors.Wrap(json.Unmarshal(b, &r), errDecode)
}

// writeRecord replaces dir/machine.json atomically: a provider killed halfway leaves the old
// file or the new one, never half of one, so that the machine is always found again.
func writeRecord(dir string, r record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return errors.Wrap(err, errEncode)
	}
	return writeFileAtomic(filepath.Join(dir, recordFile), append(b, '\n'), 0o600)
}

// writeFileAtomic writes through a temporary file in the same directory and renames it over
// path, so that readers see the whole old content or the whole new one, with mode perm
// whatever the file had before.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return errors.Wrapf(err, errFmtWriteFile, path)
	}
	tmp := f.Name()
	err = writeAndSync(f, data, perm)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return errors.Wrapf(err, errFmtWriteFile, path)
	}
	return nil
}

func writeAndSync(f *os.File, data []byte, perm os.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readCluster reads the records of one cluster's directory, sorted by name. A missing
// directory is a cluster without machines. A machine directory without machine.json is one
// whose allocation was interrupted: it holds no address and is skipped.
func readCluster(dir string) ([]record, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errors.Wrap(err, errReadDir)
	}
	var out []record
	for _, e := range entries {
		if !e.IsDir() || checkName("machine name", e.Name()) != nil {
			continue
		}
		r, err := readRecord(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, errors.Wrapf(err, errFmtReadEntry, filepath.Join(dir, e.Name()))
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// readAll reads the records of every cluster under dir.
func readAll(dir string) ([]record, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, errors.Wrap(err, errReadDir)
	}
	var out []record
	for _, e := range entries {
		if !e.IsDir() || checkName("cluster", e.Name()) != nil {
			continue
		}
		recs, err := readCluster(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// removeEmptyClusterDirs removes the cluster directories that hold no machine any more; what
// still holds something (a machine Delete could not stop) stays.
func removeEmptyClusterDirs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && checkName("cluster", e.Name()) == nil {
			// os.Remove refuses directories that are not empty, which is the point.
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
