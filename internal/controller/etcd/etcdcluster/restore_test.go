package etcdcluster

import (
	"context"
	"errors"
	"fmt"
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
