package local

import (
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

const (
	// earlyExitWindow is how long Start watches a new member: etcd rejects bad flags, unusable
	// certificates and a taken port within milliseconds, and reporting that from Start beats a
	// member that is merely never healthy.
	earlyExitWindow = 300 * time.Millisecond
	// logTailLines is how much of etcd.log an early exit error quotes.
	logTailLines = 15

	caFile   = "ca.crt"
	certFile = "member.crt"
	keyFile  = "member.key"

	errWriteTLS     = "cannot write the member's certificates"
	errOpenLog      = "cannot open etcd.log"
	errExec         = "cannot start etcd"
	errWritePID     = "cannot write etcd.pid"
	errFmtEarlyExit = "etcd exited within %s of starting; the end of %s:\n%s"
	errFmtConfig    = "cannot start machine %s of cluster %s"
)

// Start starts the machine's member with cfg. A member that runs already is left alone, with
// the configuration it was started with; one that ran and stopped starts again with cfg, on
// the data it left. Start does not wait for the member to be healthy: a joining member only
// becomes healthy once the cluster has accepted it.
func (b *Backend) Start(ctx context.Context, cluster, name string, cfg machines.MemberConfig) (machines.Machine, error) {
	if err := checkNames(cluster, name); err != nil {
		return machines.Machine{}, err
	}
	unlock := b.lockMachine(cluster, name)
	defer unlock()

	r, err := b.read(cluster, name)
	if err != nil {
		return machines.Machine{}, err
	}
	if isOurs(r) {
		return r.machine(machines.Running), nil
	}
	dir := b.machineDir(cluster, name)
	if r, err = b.prepare(dir, r, cfg); err != nil {
		return machines.Machine{}, err
	}
	if cfg.Restore != nil {
		if _, err := os.Stat(filepath.Join(dir, dataDir)); errors.Is(err, fs.ErrNotExist) {
			if err := b.restore(ctx, dir, r, cfg); err != nil {
				return machines.Machine{}, errors.Wrapf(err, errFmtConfig, name, cluster)
			}
		}
	}
	exited, err := launch(dir, &r)
	if err != nil {
		return machines.Machine{}, err
	}
	b.log.Debug("Started etcd member", "cluster", cluster, "name", name, "pid", r.PID, "address", r.Address, "version", r.Version)
	if err := watchEarlyExit(ctx, exited, dir); err != nil {
		return r.machine(machines.Stopped), err
	}
	return r.machine(machines.Running), nil
}

// prepare checks the configuration, writes the certificates and returns the record with the
// command line that starts the member.
func (b *Backend) prepare(dir string, r record, cfg machines.MemberConfig) (record, error) {
	if err := cfg.Validate(); err != nil {
		return r, errors.Wrapf(err, errFmtConfig, r.Name, r.Cluster)
	}
	bin, err := b.binary(cfg.Version)
	if err != nil {
		return r, err
	}
	if err := writeTLS(filepath.Join(dir, tlsDir), cfg); err != nil {
		return r, err
	}
	r.Version = strings.TrimPrefix(cfg.Version, "v")
	r.CertNotAfter = cfg.CertNotAfter.UTC()
	r.Command = append([]string{bin}, etcdArgs(dir, r, cfg)...)
	return r, nil
}

// writeTLS writes the certificates the member reads at start. Only the key is secret, but the
// whole directory is the member's alone.
func writeTLS(dir string, cfg machines.MemberConfig) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errors.Wrap(err, errWriteTLS)
	}
	for _, f := range []struct {
		name string
		data []byte
		perm os.FileMode
	}{{caFile, cfg.CA, 0o644}, {certFile, cfg.Cert, 0o644}, {keyFile, cfg.Key, 0o600}} {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data, f.perm); err != nil {
			return errors.Wrap(err, errWriteTLS)
		}
	}
	return nil
}

// etcdArgs are the flags of a local member, whose files are under dir.
func etcdArgs(dir string, r record, cfg machines.MemberConfig) []string {
	tls := filepath.Join(dir, tlsDir)
	return cfg.Args(r.Name, r.PeerURL, r.ClientURL, machines.MemberPaths{
		DataDir: filepath.Join(dir, dataDir),
		CA:      filepath.Join(tls, caFile), Cert: filepath.Join(tls, certFile), Key: filepath.Join(tls, keyFile),
	})
}

// launch starts r.Command with its output appended to etcd.log, records the pid in
// machine.json and etcd.pid, and returns a channel closed when the process exits.
func launch(dir string, r *record) (<-chan struct{}, error) {
	log, err := os.OpenFile(filepath.Join(dir, logFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600) //nolint:gosec // The machine's own log.
	if err != nil {
		return nil, errors.Wrap(err, errOpenLog)
	}
	// The child has its own descriptor once started; the provider needs none.
	defer log.Close() //nolint:errcheck // Nothing was written through this descriptor.

	// Not CommandContext: the member outlives the reconcile that starts it.
	cmd := exec.Command(r.Command[0], r.Command[1:]...) //nolint:gosec,noctx // The etcd binary of BinariesDir, with flags built here.
	cmd.Dir = dir
	cmd.Env = memberEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = log, log
	// A session of its own: a Ctrl-C or SIGTERM to the provider's process group does not
	// reach the member, which keeps running across provider restarts as a real machine would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, errors.Wrap(err, errExec)
	}
	exited := reap(cmd)

	r.PID = cmd.Process.Pid
	r.StartedAt = time.Now().UTC()
	if err := writeRecord(dir, *r); err != nil {
		// A member nobody can find again would hold its address forever: stop it.
		_ = cmd.Process.Kill()
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(dir, pidFile), []byte(strconv.Itoa(r.PID)+"\n"), 0o644); err != nil {
		return nil, errors.Wrap(err, errWritePID)
	}
	return exited, nil
}

// reap waits for the child in a goroutine. Without it a member that dies (or is killed by a
// test) stays a zombie until the provider exits, and a zombie's pid still looks taken.
func reap(cmd *exec.Cmd) <-chan struct{} {
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return exited
}

// memberEnv is the provider's environment without ETCD_* variables, which etcd reads as flags:
// one set for the provider's own purposes would silently configure every member.
func memberEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		if !strings.HasPrefix(e, "ETCD_") {
			out = append(out, e)
		}
	}
	return out
}

// watchEarlyExit waits earlyExitWindow (or until ctx is done) and returns an error quoting
// etcd.log if the member exited in the meantime.
func watchEarlyExit(ctx context.Context, exited <-chan struct{}, dir string) error {
	t := time.NewTimer(earlyExitWindow)
	defer t.Stop()
	select {
	case <-exited:
		path := filepath.Join(dir, logFile)
		return errors.Errorf(errFmtEarlyExit, earlyExitWindow, path, tailFile(path, logTailLines))
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// tailFile returns the last n lines of the file, from its last 16 KiB: etcd.log grows with
// every start and only its end says why the last one failed.
func tailFile(path string, n int) string {
	const maxBytes = 16 << 10
	f, err := os.Open(path) //nolint:gosec // The machine's own log.
	if err != nil {
		return "(cannot read it: " + err.Error() + ")"
	}
	defer f.Close() //nolint:errcheck // Only read.
	var off int64
	if fi, err := f.Stat(); err == nil && fi.Size() > maxBytes {
		off = fi.Size() - maxBytes
	}
	b := make([]byte, maxBytes)
	k, err := f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return "(cannot read it: " + err.Error() + ")"
	}
	return lastLines(string(b[:k]), n)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
