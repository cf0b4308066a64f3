package local

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	// stopGrace is how long a member gets to shut down cleanly after SIGTERM before SIGKILL.
	stopGrace = 5 * time.Second
	// killWait is how long a SIGKILLed member gets to disappear before Delete gives up.
	killWait = 5 * time.Second
	// exitPoll is how often Delete looks whether a member is gone.
	exitPoll = 20 * time.Millisecond

	errFmtStillRunning = "the etcd member (pid %d) still runs after SIGKILL"
	errFmtSignal       = "cannot signal the etcd member (pid %d)"
	errRemove          = "cannot remove the directory of the local machine"
)

// procDir is where process information lives; a variable so that tests can point it at a
// fake /proc.
var procDir = "/proc"

// isOurs says whether the machine's recorded process runs: it exists, has not exited (a
// zombie has, its parent just has not reaped it yet) and runs the very command line the
// backend started it with. The last check is what keeps a pid that the kernel has since given
// to another process from passing for the member, after a host reboot, say.
func isOurs(r record) bool {
	if r.PID <= 0 || len(r.Command) == 0 {
		return false
	}
	return procRuns(r.PID) && sameCommand(procCmdline(r.PID), r.Command)
}

// sameCommand compares a process's argv with the command it was started with. An "etcd" that
// is a #! script (a wrapper, or a stand-in in tests) runs as its interpreter: the kernel puts
// the interpreter and at most one argument of the #! line before the script's path and
// arguments.
func sameCommand(argv, cmd []string) bool {
	extra := len(argv) - len(cmd)
	return extra >= 0 && extra <= 2 && slices.Equal(argv[extra:], cmd)
}

// procRuns is true when the process exists and is not a zombie.
func procRuns(pid int) bool {
	b, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses, the last ')' ends it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	f := bytes.Fields(b[i+1:])
	return len(f) > 0 && string(f[0]) != "Z" && string(f[0]) != "X"
}

// procCmdline is the process's argv (nil if it cannot be read).
func procCmdline(pid int) []string {
	b, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return splitNUL(b)
}

func splitNUL(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	parts := bytes.Split(b, []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}

// Delete stops the machine's member and removes the machine's directory, data included, which
// releases its address.
func (b *Backend) Delete(ctx context.Context, cluster, name string) error {
	if err := checkNames(cluster, name); err != nil {
		return err
	}
	unlock := b.lockMachine(cluster, name)
	defer unlock()

	dir := b.machineDir(cluster, name)
	r, err := readRecord(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Nothing was allocated, or only a directory of an interrupted allocation is left.
	case err != nil:
		return errors.Wrap(err, errRead)
	default:
		if err := stop(ctx, r); err != nil {
			return err
		}
	}
	if err := b.removeMachineDir(ctx, dir); err != nil {
		return err
	}
	b.log.Debug("Deleted local machine", "cluster", cluster, "name", name)
	return nil
}

// removeMachineDir removes the directory under the allocation lock: an allocation in another
// process must not see half a directory, and must see the address free only once it is.
func (b *Backend) removeMachineDir(ctx context.Context, dir string) error {
	unlock, err := b.lockAllocation(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.RemoveAll(dir); err != nil {
		return errors.Wrap(err, errRemove)
	}
	// The cluster's directory goes with its last machine; os.Remove refuses it before.
	_ = os.Remove(filepath.Dir(dir))
	return nil
}

// stop sends SIGTERM to the member if it is ours, and SIGKILL if it is still there after
// stopGrace (or once ctx is done). It returns once the process is gone: only then may its
// directory go, and its address be handed out again.
func stop(ctx context.Context, r record) error {
	if !isOurs(r) {
		return nil
	}
	if err := signal(r, syscall.SIGTERM); err != nil {
		return err
	}
	if waitGone(ctx, r, stopGrace) {
		return nil
	}
	if err := signal(r, syscall.SIGKILL); err != nil {
		return err
	}
	// SIGKILL cannot be ignored; waiting must not depend on ctx, which may be done by now.
	if waitGone(context.Background(), r, killWait) {
		return nil
	}
	return errors.Errorf(errFmtStillRunning, r.PID)
}

func signal(r record, sig syscall.Signal) error {
	err := syscall.Kill(r.PID, sig)
	if err == nil || errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return errors.Wrapf(err, errFmtSignal, r.PID)
}

// waitGone waits up to d (or until ctx is done) for the member to stop running, and says
// whether it did.
func waitGone(ctx context.Context, r record, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(exitPoll)
	defer tick.Stop()
	for {
		if !isOurs(r) {
			return true
		}
		select {
		case <-ctx.Done():
			return !isOurs(r)
		case <-deadline.C:
			return !isOurs(r)
		case <-tick.C:
		}
	}
}
