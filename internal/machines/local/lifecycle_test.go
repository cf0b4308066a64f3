package local

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

// fakeEtcd stands in for etcd: it prints its flags and runs until SIGTERM, except as member
// "crash", which fails at once the way etcd does with a bad flag. The loop of short sleeps
// (rather than one long one) leaves no orphan behind for long when the script is killed.
const fakeEtcd = `#!/bin/sh
case "$*" in *--name=crash*) echo "fake etcd: bad configuration" >&2; exit 1;; esac
echo "fake etcd $*"
trap 'exit 0' TERM
while :; do sleep 0.05; done
`

func newFakeBackend(t *testing.T, dir string) *Backend {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "v3.6.16")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "etcd"), []byte(fakeEtcd), 0o755); err != nil {
		t.Fatal(err)
	}
	b := newUnitBackend(t, Options{Dir: dir, BinariesDir: filepath.Dir(bin), AddressRange: testRange(5, 100, 120)})
	t.Cleanup(func() {
		if err := b.Purge(context.Background()); err != nil {
			t.Errorf("Purge: %v", err)
		}
	})
	return b
}

func fakeConfig(name string) machines.MemberConfig {
	return machines.MemberConfig{
		Version: "3.6.16", InitialCluster: name + "=https://127.0.5.100:2380", InitialClusterState: "new",
		InitialClusterToken: "c", CA: []byte("ca"), Cert: []byte("cert"), Key: []byte("key"),
		CertNotAfter: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

func stateOf(t *testing.T, b *Backend, cluster, name string) machines.State {
	t.Helper()
	ms, err := b.List(context.Background(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Name == name {
			return m.State
		}
	}
	t.Fatalf("no machine %s in %v", name, ms)
	return ""
}

func waitState(t *testing.T, b *Backend, cluster, name string, want machines.State) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for got := stateOf(t, b, cluster, name); got != want; got = stateOf(t, b, cluster, name) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is %s after 5s, want %s", name, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLifecycleWithFakeEtcd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := newFakeBackend(t, dir)
	if _, err := b.Allocate(ctx, "c", "m0"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Start(ctx, "c", "nobody", fakeConfig("nobody")); err == nil || !strings.Contains(err.Error(), "allocate it first") {
		t.Errorf("Start of a machine never allocated: %v, want an error saying to allocate it", err)
	}

	m, err := b.Start(ctx, "c", "m0", fakeConfig("m0"))
	if err != nil {
		t.Fatal(err)
	}
	if m.State != machines.Running || m.Version != "3.6.16" || !m.CertNotAfter.Equal(fakeConfig("m0").CertNotAfter) {
		t.Errorf("Start returned %+v, want Running 3.6.16 with the certificate's expiry", m)
	}
	pid, err := b.PID("c", "m0")
	if err != nil {
		t.Fatal(err)
	}
	checkMachineFiles(t, filepath.Join(dir, "c", "m0"), pid)

	// Started again while it runs: the same process.
	if _, err := b.Start(ctx, "c", "m0", fakeConfig("m0")); err != nil {
		t.Fatal(err)
	}
	if again, _ := b.PID("c", "m0"); again != pid {
		t.Errorf("Start of a running member started another one: pid %d, was %d", again, pid)
	}

	// Killed: reaped and Stopped, not a zombie that looks alive.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitState(t, b, "c", "m0", machines.Stopped)
	if _, err := b.PID("c", "m0"); err == nil {
		t.Error("PID of a stopped member succeeded")
	}

	// Started again, then found again by a backend that stands for a restarted provider.
	if _, err := b.Start(ctx, "c", "m0", fakeConfig("m0")); err != nil {
		t.Fatal(err)
	}
	restarted := newFakeBackend(t, dir)
	if got := stateOf(t, restarted, "c", "m0"); got != machines.Running {
		t.Errorf("after a provider restart the member is %s, want Running", got)
	}
	newPID, _ := restarted.PID("c", "m0")
	if newPID == pid || newPID == 0 {
		t.Errorf("restarted member has pid %d (killed one had %d)", newPID, pid)
	}

	if err := restarted.Delete(ctx, "c", "m0"); err != nil {
		t.Fatal(err)
	}
	if procRuns(newPID) {
		t.Errorf("pid %d still runs after Delete", newPID)
	}
	if _, err := os.Stat(filepath.Join(dir, "c")); !os.IsNotExist(err) {
		t.Errorf("the cluster's directory is still there after its last machine was deleted: %v", err)
	}
	if err := restarted.Delete(ctx, "c", "m0"); err != nil {
		t.Errorf("Delete of a deleted machine: %v", err)
	}
}

func checkMachineFiles(t *testing.T, mdir string, pid int) {
	t.Helper()
	if fi, err := os.Stat(filepath.Join(mdir, tlsDir, keyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("member.key: %v, %v; want mode 0600", fi, err)
	}
	for _, f := range []string{caFile, certFile} {
		if _, err := os.Stat(filepath.Join(mdir, tlsDir, f)); err != nil {
			t.Error(err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(mdir, pidFile)); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(pid) {
		t.Errorf("etcd.pid holds %q (%v), want %d", b, err, pid)
	}
	r, err := readRecord(mdir)
	if err != nil {
		t.Fatal(err)
	}
	if r.PID != pid || len(r.Command) == 0 || !strings.HasSuffix(r.Command[0], "/v3.6.16/etcd") {
		t.Errorf("machine.json has pid %d and command %v, want pid %d and the v3.6.16 etcd", r.PID, r.Command, pid)
	}
	// The fake prints its flags once it runs; give it the time to.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(mdir, logFile))
		if strings.Contains(string(b), "fake etcd --name=m0") {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("etcd.log = %q, want the member's output", b)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartReportsEarlyExit(t *testing.T) {
	ctx := context.Background()
	b := newFakeBackend(t, t.TempDir())
	if _, err := b.Allocate(ctx, "c", "crash"); err != nil {
		t.Fatal(err)
	}
	_, err := b.Start(ctx, "c", "crash", fakeConfig("crash"))
	if err == nil || !strings.Contains(err.Error(), "fake etcd: bad configuration") {
		t.Fatalf("Start of a member that exits at once: %v, want an error quoting etcd.log", err)
	}
	if got := stateOf(t, b, "c", "crash"); got != machines.Stopped {
		t.Errorf("member that exited is %s, want Stopped", got)
	}
}

func TestStartMissingVersion(t *testing.T) {
	ctx := context.Background()
	b := newFakeBackend(t, t.TempDir())
	if _, err := b.Allocate(ctx, "c", "m0"); err != nil {
		t.Fatal(err)
	}
	cfg := fakeConfig("m0")
	cfg.Version = "3.5.35"
	_, err := b.Start(ctx, "c", "m0", cfg)
	if err == nil || !strings.Contains(err.Error(), "cluster/tools.sh etcd@v3.5.35") || !strings.Contains(err.Error(), "v3.5.35/etcd") {
		t.Errorf("Start with a version that has no binary: %v, want the path looked at and how to build it", err)
	}
	if got := stateOf(t, b, "c", "m0"); got != machines.Allocated {
		t.Errorf("after a failed Start the machine is %s, want still Allocated", got)
	}
}

func TestPurge(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := newFakeBackend(t, dir)
	var pids []int
	for _, c := range []string{"c1", "c2"} {
		for _, n := range []string{"m0", "m1"} {
			if _, err := b.Allocate(ctx, c, n); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Start(ctx, c, n, fakeConfig(n)); err != nil {
				t.Fatal(err)
			}
			pid, err := b.PID(c, n)
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
	}
	if _, err := b.Allocate(ctx, "c3", "never-started"); err != nil {
		t.Fatal(err)
	}
	if err := b.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if procRuns(pid) {
			t.Errorf("pid %d still runs after Purge", pid)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != lockFile {
			t.Errorf("%s is left after Purge", e.Name())
		}
	}
}
