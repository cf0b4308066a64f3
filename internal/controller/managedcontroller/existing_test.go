package managedcontroller

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource/fake"
)

// TestUpdateNeedsAnExistingResource: Update reaches the kind's client only when this
// reconcile's Observe found the external resource.
func TestUpdateNeedsAnExistingResource(t *testing.T) {
	cases := map[string]struct {
		observed   managed.ExternalObservation
		observeErr error
		observe    bool
		wantErr    string
		wantUpdate bool
	}{
		"Exists":            {observe: true, observed: managed.ExternalObservation{ResourceExists: true}, wantUpdate: true},
		"Absent":            {observe: true, observed: managed.ExternalObservation{ResourceExists: false}, wantErr: ErrNotCreated},
		"ObserveFailed":     {observe: true, observeErr: errors.New("boom"), wantUpdate: true},
		"UpdateWithoutLook": {wantUpdate: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			updated := false
			inner := managed.TypedExternalClientFns[resource.Managed]{
				ObserveFn: func(context.Context, resource.Managed) (managed.ExternalObservation, error) {
					return tc.observed, tc.observeErr
				},
				UpdateFn: func(context.Context, resource.Managed) (managed.ExternalUpdate, error) {
					updated = true
					return managed.ExternalUpdate{}, nil
				},
			}
			c := existingOnlyConnector[resource.Managed]{managed.TypedExternalConnectorFn[resource.Managed](
				func(context.Context, resource.Managed) (managed.TypedExternalClient[resource.Managed], error) {
					return inner, nil
				})}
			ctx := context.Background()
			mg := &fake.Managed{}
			ext, err := c.Connect(ctx, mg)
			if err != nil {
				t.Fatal(err)
			}
			if tc.observe {
				_, _ = ext.Observe(ctx, mg)
			}
			_, err = ext.Update(ctx, mg)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, got); diff != "" {
				t.Errorf("Update(): -want +got:\n%s", diff)
			}
			if updated != tc.wantUpdate {
				t.Errorf("the kind's Update was called: %v, want %v", updated, tc.wantUpdate)
			}
		})
	}
}
