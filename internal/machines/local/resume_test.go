package local

import (
	"context"
	"syscall"
	"testing"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

func TestResumeStartsStoppedMembersOnly(t *testing.T) {
	ctx := context.Background()
	b := newFakeBackend(t, t.TempDir())
	for _, name := range []string{"up", "down", "never"} {
		if _, err := b.Allocate(ctx, "c", name); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"up", "down"} {
		if _, err := b.Start(ctx, "c", name, fakeConfig(name)); err != nil {
			t.Fatal(err)
		}
	}
	upPID, err := b.PID("c", "up")
	if err != nil {
		t.Fatal(err)
	}
	downPID, err := b.PID("c", "down")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(downPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitState(t, b, "c", "down", machines.Stopped)

	n, err := b.Resume(ctx)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if n != 1 {
		t.Errorf("Resume started %d members, want 1", n)
	}
	waitState(t, b, "c", "down", machines.Running)
	if got := stateOf(t, b, "c", "never"); got != machines.Allocated {
		t.Errorf("a machine that never ran is %s after Resume, want %s", got, machines.Allocated)
	}
	if pid, err := b.PID("c", "up"); err != nil || pid != upPID {
		t.Errorf("the running member was restarted: pid %d (%v), was %d", pid, err, upPID)
	}
}

func TestResumeOnlyTheClustersNamed(t *testing.T) {
	ctx := context.Background()
	b := newFakeBackend(t, t.TempDir())
	for _, cluster := range []string{"a", "b"} {
		if _, err := b.Allocate(ctx, cluster, "m"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Start(ctx, cluster, "m", fakeConfig("m")); err != nil {
			t.Fatal(err)
		}
		pid, err := b.PID(cluster, "m")
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitState(t, b, cluster, "m", machines.Stopped)
	}
	if n, err := b.Resume(ctx, "a"); err != nil || n != 1 {
		t.Fatalf("Resume(a) = %d, %v; want 1 member started", n, err)
	}
	waitState(t, b, "a", "m", machines.Running)
	if got := stateOf(t, b, "b", "m"); got != machines.Stopped {
		t.Errorf("cluster b's member is %s after Resume(a), want %s", got, machines.Stopped)
	}
}
