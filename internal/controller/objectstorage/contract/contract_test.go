package contract

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
)

// fakeKeystone keeps EC2 credentials in memory.
type fakeKeystone struct {
	creds map[string]openstack.EC2Credential
	n     int
}

func (f *fakeKeystone) WhoAmI() (string, string, error) { return "u1", "p1", nil }

func (f *fakeKeystone) CreateEC2Credential(_ context.Context, user, project string) (*openstack.EC2Credential, error) {
	f.n++
	c := openstack.EC2Credential{Access: "AK" + string(rune('0'+f.n)), Secret: "SK" + string(rune('0'+f.n)), UserID: user, ProjectID: project}
	f.creds[c.Access] = c
	return &c, nil
}

func (f *fakeKeystone) GetEC2Credential(_ context.Context, _, access string) (*openstack.EC2Credential, error) {
	c, ok := f.creds[access]
	if !ok {
		return nil, notFound{}
	}
	return &c, nil
}

func (f *fakeKeystone) DeleteEC2Credential(_ context.Context, _, access string) error {
	delete(f.creds, access)
	return nil
}

type notFound struct{}

func (notFound) Error() string { return "not found" }

type nopAnnotator struct{}

func (nopAnnotator) UpdateCriticalAnnotations(context.Context, client.Object) error { return nil }

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestRotationKeepsPreviousKeysForTheGracePeriod(t *testing.T) {
	k := &fakeKeystone{creds: map[string]openstack.EC2Credential{}}
	now := t0
	e := &external{creds: k, endpoint: "http://s3", region: "us-east-1", record: event.NewNopRecorder(), annotate: nopAnnotator{}, now: func() time.Time { return now }}
	cr := &v1alpha1.Contract{Spec: v1alpha1.ContractSpec{ForProvider: v1alpha1.ContractParameters{Rotation: &v1alpha1.KeyRotation{
		Period:      &metav1.Duration{Duration: 24 * time.Hour},
		GracePeriod: &metav1.Duration{Duration: 10 * time.Minute},
		Request:     ptr.To("initial"),
	}}}}
	ctx := context.Background()

	created, err := e.Create(ctx, cr)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(created.ConnectionDetails[v1alpha1.ConnectionAWSAccessKeyID]); got != "AK1" {
		t.Fatalf("created keys: %q", got)
	}
	obs := observe(t, e, cr)
	if !obs.ResourceUpToDate {
		t.Fatalf("fresh keys with an old request value must not rotate at once")
	}

	// A day later the period is over: new keys are published, the old ones stay valid.
	now = t0.Add(24 * time.Hour)
	if obs := observe(t, e, cr); obs.ResourceUpToDate {
		t.Fatal("keys past their period should be rotated")
	}
	u, err := e.Update(ctx, cr)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(u.ConnectionDetails[v1alpha1.ConnectionAWSSecretKey]); got != "SK2" {
		t.Errorf("published secret after rotation: %q, want SK2", got)
	}
	if meta.GetExternalName(cr) != "AK2" || cr.Status.AtProvider.PreviousAccessKeyID != "AK1" || readRotation(cr).previous != "AK1" {
		t.Errorf("after rotation: external name %q, previous %q (annotation %q)", meta.GetExternalName(cr), cr.Status.AtProvider.PreviousAccessKeyID, readRotation(cr).previous)
	}
	// The reconcile the annotation update triggers may see the old status: the record in
	// the annotations alone must say the rotation is done.
	cr.Status.AtProvider = v1alpha1.ContractObservation{}
	if obs := observe(t, e, cr); !obs.ResourceUpToDate {
		t.Error("a stale status made the keys look due for rotation again")
	}
	if _, ok := k.creds["AK1"]; !ok {
		t.Error("the previous keys were deleted before their grace period")
	}

	// Within the grace period nothing changes; after it the previous keys go.
	now = now.Add(5 * time.Minute)
	if obs := observe(t, e, cr); !obs.ResourceUpToDate {
		t.Error("nothing to do within the grace period")
	}
	now = now.Add(6 * time.Minute)
	if obs := observe(t, e, cr); obs.ResourceUpToDate {
		t.Error("the previous keys should be retired after the grace period")
	}
	if _, err := e.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"AK2"}, keys(k)); diff != "" {
		t.Errorf("credentials in Keystone: -want, +got:\n%s", diff)
	}

	// A new request rotates again at once.
	cr.Spec.ForProvider.Rotation.Request = ptr.To("ticket-42")
	if obs := observe(t, e, cr); obs.ResourceUpToDate {
		t.Fatal("a new rotation request should rotate")
	}
	if _, err := e.Update(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"AK2", "AK3"}, keys(k)); diff != "" {
		t.Errorf("credentials after the requested rotation: -want, +got:\n%s", diff)
	}
	if obs := observe(t, e, cr); !obs.ResourceUpToDate {
		t.Error("a request is acted on once")
	}

	// Delete removes both keys.
	if _, err := e.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if len(k.creds) != 0 {
		t.Errorf("credentials left after delete: %v", keys(k))
	}
}

func observe(t *testing.T, e *external, cr *v1alpha1.Contract) managed.ExternalObservation {
	t.Helper()
	o, err := e.Observe(context.Background(), cr)
	if err != nil {
		t.Fatal(err)
	}
	if !o.ResourceExists {
		t.Fatal("the contract's keys should exist")
	}
	return o
}

func keys(k *fakeKeystone) []string {
	var out []string
	for a := range k.creds {
		out = append(out, a)
	}
	if len(out) > 1 && out[0] > out[1] {
		out[0], out[1] = out[1], out[0]
	}
	return out
}
