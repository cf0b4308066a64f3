package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestIsOursFakeProc(t *testing.T) {
	proc := t.TempDir()
	write := func(pid, stat string, argv string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "cmdline"), []byte(argv), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := []string{"/bin/etcd", "--name=m0", "--data-dir=/d/c/m0/data"}
	argv := "/bin/etcd\x00--name=m0\x00--data-dir=/d/c/m0/data\x00"
	write("10", "10 (etcd) S 1 10 10 0 -1", argv)
	write("11", "11 (etcd) Z 1 11 11 0 -1", argv)
	write("12", "12 (etcd) S 1 12 12 0 -1", "/bin/etcd\x00--name=m1\x00--data-dir=/d/c/m1/data\x00")
	write("13", "13 (sleep) S 1 13 13 0 -1", "sleep\x0060\x00")
	// A comm with ") Z " in it must not pass for a zombie, nor hide one.
	write("14", "14 (odd) Z (x) S 1 14 14 0 -1", argv)
	write("15", "15 (sh) S 1 15 15 0 -1", "/bin/sh\x00/bin/etcd\x00--name=m0\x00--data-dir=/d/c/m0/data\x00")
	write("16", "16 (sh) S 1 16 16 0 -1", "/usr/bin/env\x00sh\x00/bin/etcd\x00--name=m0\x00--data-dir=/d/c/m0/data\x00")
	write("17", "17 (x) S 1 17 17 0 -1", "a\x00b\x00c\x00/bin/etcd\x00--name=m0\x00--data-dir=/d/c/m0/data\x00")

	old := procDir
	procDir = proc
	t.Cleanup(func() { procDir = old })

	cases := map[string]struct {
		r    record
		want bool
	}{
		"Running":              {r: record{PID: 10, Command: cmd}, want: true},
		"Zombie":               {r: record{PID: 11, Command: cmd}},
		"AnotherMember":        {r: record{PID: 12, Command: cmd}},
		"PIDReused":            {r: record{PID: 13, Command: cmd}},
		"ParenthesesInComm":    {r: record{PID: 14, Command: cmd}, want: true},
		"ScriptInterpreter":    {r: record{PID: 15, Command: cmd}, want: true},
		"InterpreterWithArg":   {r: record{PID: 16, Command: cmd}, want: true},
		"TooMuchBeforeCommand": {r: record{PID: 17, Command: cmd}},
		"NoSuchProcess":        {r: record{PID: 99, Command: cmd}},
		"NeverStarted":         {r: record{}},
		"NoCommandRecorded":    {r: record{PID: 10}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := isOurs(tc.r); got != tc.want {
				t.Errorf("isOurs(pid %d) = %t, want %t", tc.r.PID, got, tc.want)
			}
		})
	}
}

func TestIsOursRealProcesses(t *testing.T) {
	self := record{PID: os.Getpid(), Command: os.Args}
	if !isOurs(self) {
		t.Errorf("isOurs(this test process) = false")
	}
	if other := (record{PID: os.Getpid(), Command: []string{"/bin/etcd"}}); isOurs(other) {
		t.Errorf("isOurs(this test process, another command) = true")
	}

	// A child that exited and was not waited for is a zombie: it has a pid and a /proc
	// entry, and must not pass for running.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for procRuns(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs 5s after `true` started", cmd.Process.Pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Still there: what procRuns saw was the zombie, not a process that is gone.
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid))); err != nil {
		t.Errorf("the zombie's /proc entry is gone before it was reaped: %v", err)
	}
}

func TestSplitNUL(t *testing.T) {
	if diff := cmp.Diff([]string{"etcd", "--name=m0", ""}, splitNUL([]byte("etcd\x00--name=m0\x00\x00"))); diff != "" {
		t.Errorf("splitNUL: -want +got:\n%s", diff)
	}
}
