package managedcontroller

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/stackservices/provider-stackservices/apis"
	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
)

// TestUnchangedStatusSkipper: a status update that would write what the last read returned
// is answered without the API server; any other goes to it.
func TestUnchangedStatusSkipper(t *testing.T) {
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "app", Name: "web"}
	withState := func(sg *v1alpha1.SecurityGroup, state string) *v1alpha1.SecurityGroup {
		sg.Status.AtProvider.ID = state
		return sg
	}

	cases := map[string]struct {
		// steps run against the skipper; each returns the object to update the status of.
		steps func(t *testing.T, c *unchangedStatusSkipper, stale *v1alpha1.SecurityGroup) *v1alpha1.SecurityGroup
		// want is the number of status updates the API server received.
		want int
	}{
		"UnchangedSinceRead": {
			steps: func(t *testing.T, c *unchangedStatusSkipper, _ *v1alpha1.SecurityGroup) *v1alpha1.SecurityGroup {
				sg := &v1alpha1.SecurityGroup{}
				mustGet(t, c, key, sg)
				return sg
			},
			want: 0,
		},
		"ChangedSinceRead": {
			steps: func(t *testing.T, c *unchangedStatusSkipper, _ *v1alpha1.SecurityGroup) *v1alpha1.SecurityGroup {
				sg := &v1alpha1.SecurityGroup{}
				mustGet(t, c, key, sg)
				return withState(sg, "changed")
			},
			want: 1,
		},
		"NeverRead": {
			steps: func(t *testing.T, c *unchangedStatusSkipper, _ *v1alpha1.SecurityGroup) *v1alpha1.SecurityGroup {
				sg := &v1alpha1.SecurityGroup{}
				if err := c.Client.Get(ctx, key, sg); err != nil {
					t.Fatal(err)
				}
				return sg
			},
			want: 1,
		},
		"UnchangedAfterOwnWrite": {
			steps: func(t *testing.T, c *unchangedStatusSkipper, _ *v1alpha1.SecurityGroup) *v1alpha1.SecurityGroup {
				sg := &v1alpha1.SecurityGroup{}
				mustGet(t, c, key, sg)
				if err := c.Status().Update(ctx, withState(sg, "changed")); err != nil {
					t.Fatal(err)
				}
				again := &v1alpha1.SecurityGroup{}
				mustGet(t, c, key, again)
				return again
			},
			// The write; the second update writes what the API server has.
			want: 1,
		},
		// A cache that lags behind still returns the version before this client's write: a
		// status equal to that old one is not what the API server has, and must be written
		// (and conflict, as it would have without the skipper).
		"StaleReadAfterOwnWrite": {
			steps: func(t *testing.T, c *unchangedStatusSkipper, stale *v1alpha1.SecurityGroup) *v1alpha1.SecurityGroup {
				sg := &v1alpha1.SecurityGroup{}
				mustGet(t, c, key, sg)
				stale.SetResourceVersion(sg.GetResourceVersion())
				if err := c.Status().Update(ctx, withState(sg, "changed")); err != nil {
					t.Fatal(err)
				}
				old := &v1alpha1.SecurityGroup{}
				mustGet(t, c, key, old) // The interceptor serves the stale copy.
				return old
			},
			want: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			if err := apis.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			existing := withState(&v1alpha1.SecurityGroup{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: "uid-1"}}, "observed")
			var stale *v1alpha1.SecurityGroup
			updates, gets := 0, 0
			fc := fake.NewClientBuilder().WithScheme(s).WithObjects(existing).WithStatusSubresource(existing).
				WithInterceptorFuncs(interceptor.Funcs{
					Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
						gets++
						if gets > 1 && stale != nil && stale.GetResourceVersion() != "" {
							stale.DeepCopyInto(obj.(*v1alpha1.SecurityGroup))
							return nil
						}
						return c.Get(ctx, k, obj, opts...)
					},
					SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
						updates++
						return c.SubResource(sub).Update(ctx, obj, opts...)
					},
				}).Build()
			if name == "StaleReadAfterOwnWrite" {
				stale = existing.DeepCopy()
			}
			c := newUnchangedStatusSkipper(fc)
			obj := tc.steps(t, c, stale)
			err := c.Status().Update(ctx, obj)
			if name == "StaleReadAfterOwnWrite" {
				if err == nil {
					t.Errorf("the update from a stale read did not conflict")
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, updates); diff != "" {
				t.Errorf("status updates the API server received (-want +got):\n%s", diff)
			}
		})
	}
}

func mustGet(t *testing.T, c client.Client, key client.ObjectKey, obj client.Object) {
	t.Helper()
	if err := c.Get(context.Background(), key, obj); err != nil {
		t.Fatal(err)
	}
}

// TestUnchangedStatusSkipperForgetsGoneObjects: the reconcile that finds an object gone
// (crossplane-runtime's Get of an empty object says NotFound) drops what was kept of it.
func TestUnchangedStatusSkipperForgetsGoneObjects(t *testing.T) {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: "app", Name: "web"}
	existing := &v1alpha1.SecurityGroup{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: "uid-1"}}
	fc := fake.NewClientBuilder().WithScheme(s).WithObjects(existing).WithStatusSubresource(existing).Build()
	c := newUnchangedStatusSkipper(fc)
	mustGet(t, c, key, &v1alpha1.SecurityGroup{})
	if len(c.seen) != 1 {
		t.Fatalf("%d objects kept after a read, want 1", len(c.seen))
	}
	if err := fc.Delete(context.Background(), existing); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), key, &v1alpha1.SecurityGroup{}); client.IgnoreNotFound(err) != nil || err == nil {
		t.Fatalf("Get of a deleted object: %v, want NotFound", err)
	}
	if len(c.seen) != 0 {
		t.Errorf("%d objects kept after the object was found gone, want 0", len(c.seen))
	}
}
