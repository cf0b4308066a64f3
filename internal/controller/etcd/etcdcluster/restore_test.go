package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

// TestRefusedRestore: a bootstrap from a backup gives up (and deletes its machines) when the
// provider's check failed or a machine refused the snapshot, and not for a failure of a
// machine's own (the next bootstrap retries those).
func TestRefusedRestore(t *testing.T) {
	checkFailed := errors.New("backup b cannot be restored, and nothing was started: bad")
	refused := fmt.Errorf("cannot start member: %w", &machines.RefusedSnapshotError{Reason: errors.New("SHA-256 mismatch")})
	cases := map[string]struct {
		checked func(context.Context) error
		errs    []error
		want    string
	}{
		"AllStarted":      {errs: []error{nil, nil, nil}},
		"MachineFailed":   {errs: []error{nil, errors.New("no space left"), nil}},
		"MachineRefused":  {errs: []error{nil, refused, nil}, want: "backup ns/x.snapshot cannot be restored, and the machines of the attempt were deleted: SHA-256 mismatch"},
		"ProviderChecked": {checked: func(context.Context) error { return nil }, errs: []error{nil}},
		"ProviderRefused": {checked: func(context.Context) error { return checkFailed }, errs: []error{nil}, want: checkFailed.Error()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := refusedRestore(context.Background(), "ns/x.snapshot", &machines.RestoreSource{Checked: tc.checked}, tc.errs)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refusedRestore(...): -want +got:\n%s", diff)
			}
		})
	}
}

// TestOnceChecked: the check runs only once something waits for it, once for every waiter,
// and each waiter gets its verdict.
func TestOnceChecked(t *testing.T) {
	var runs atomic.Int32
	bad := errors.New("the stored snapshot's SHA-256 is 00, its metadata says ff")
	wait := onceChecked(context.Background(), func(context.Context) error {
		runs.Add(1)
		return bad
	})
	if n := runs.Load(); n != 0 {
		t.Fatalf("the check ran %d times before anyone waited for it", n)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := wait(context.Background()); !errors.Is(err, bad) {
				t.Errorf("wait() = %v, want the check's error", err)
			}
		})
	}
	wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Errorf("the check ran %d times for 3 waiters, want once", n)
	}
}
