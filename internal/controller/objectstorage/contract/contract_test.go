package contract

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/stackservices/provider-stackservices/apis/common"
	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
)

// fakeKeystone keeps EC2 credentials in memory.
type fakeKeystone struct {
	creds      map[string]openstack.EC2Credential
	n          int
	failCreate error
}

func (f *fakeKeystone) WhoAmI() (string, string, error) { return "u1", "p1", nil }

func (f *fakeKeystone) CreateEC2Credential(_ context.Context, c openstack.EC2Credential) error {
	if f.failCreate != nil {
		return f.failCreate
	}
	f.creds[c.Access] = c
	return nil
}

// newKeys hands out AK1/SK1, AK2/SK2, ... in order.
func (f *fakeKeystone) newKeys() (string, string, error) {
	f.n++
	return "AK" + string(rune('0'+f.n)), "SK" + string(rune('0'+f.n)), nil
}

func (f *fakeKeystone) GetEC2Credential(_ context.Context, _, access string) (*openstack.EC2Credential, error) {
	c, ok := f.creds[access]
	if !ok {
		return nil, gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusNotFound}
	}
	return &c, nil
}

func (f *fakeKeystone) DeleteEC2Credential(_ context.Context, _, access string) error {
	delete(f.creds, access)
	return nil
}

type nopAnnotator struct{}

func (nopAnnotator) UpdateCriticalAnnotations(context.Context, client.Object) error { return nil }

// savingAnnotator keeps the annotations of the last successful update, as the API server
// would, and fails the updates numbered in fail (1 is the first).
type savingAnnotator struct {
	calls int
	fail  map[int]bool
	saved map[string]string
}

func (a *savingAnnotator) UpdateCriticalAnnotations(_ context.Context, o client.Object) error {
	a.calls++
	if a.fail[a.calls] {
		return errors.New("the API server is gone")
	}
	a.saved = maps.Clone(o.GetAnnotations())
	return nil
}

func newExternal(k *fakeKeystone, a managed.CriticalAnnotationUpdater, now *time.Time) *external {
	return &external{
		creds: k, endpoint: "http://s3", region: "us-east-1", record: event.NewNopRecorder(), annotate: a,
		mayCreate: func(context.Context) error { return nil }, newKeys: k.newKeys, now: func() time.Time { return *now },
		users: func(context.Context) ([]string, error) { return nil, nil },
	}
}

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestRotationKeepsPreviousKeysForTheGracePeriod(t *testing.T) {
	k := &fakeKeystone{creds: map[string]openstack.EC2Credential{}}
	now := t0
	e := newExternal(k, nopAnnotator{}, &now)
	cr := &v1alpha1.Contract{Spec: v1alpha1.ContractSpec{ForProvider: v1alpha1.ContractParameters{Rotation: &v1alpha1.KeyRotation{
		Period:      ptr.To(common.Duration("24h")),
		GracePeriod: ptr.To(common.Duration("10m")),
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
	slices.Sort(out)
	return out
}

// No key ever exists without a record of it: a crash (or a failed write) at any point of a
// create or a rotation leaves a key the next reconcile finds, and never one it does not.
func TestKeysAreRecordedBeforeTheyExist(t *testing.T) {
	ctx := context.Background()
	now := t0

	t.Run("RecordingFailsBeforeCreate", func(t *testing.T) {
		k := &fakeKeystone{creds: map[string]openstack.EC2Credential{}}
		e := newExternal(k, &savingAnnotator{fail: map[int]bool{1: true}}, &now)
		if _, err := e.Create(ctx, &v1alpha1.Contract{}); err == nil {
			t.Fatal("Create succeeded without recording the key")
		}
		if len(k.creds) != 0 {
			t.Errorf("a key exists that nothing recorded: %v", keys(k))
		}
	})

	t.Run("CrashAfterCreate", func(t *testing.T) {
		k := &fakeKeystone{creds: map[string]openstack.EC2Credential{}}
		a := &savingAnnotator{}
		e := newExternal(k, a, &now)
		if _, err := e.Create(ctx, &v1alpha1.Contract{}); err != nil {
			t.Fatal(err)
		}
		// The provider dies before the reconciler writes the external name: what the API
		// server holds is the pending record only.
		restarted := &v1alpha1.Contract{}
		restarted.SetAnnotations(a.saved)
		o := observe(t, e, restarted)
		if !o.ResourceLateInitialized || meta.GetExternalName(restarted) != "AK1" || readRotation(restarted).pending != "" {
			t.Errorf("after the crash: external name %q, pending %q, late-initialized %v; want AK1 recorded", meta.GetExternalName(restarted), readRotation(restarted).pending, o.ResourceLateInitialized)
		}
		if got := string(o.ConnectionDetails[v1alpha1.ConnectionAWSSecretKey]); got != "SK1" {
			t.Errorf("published secret %q, want SK1", got)
		}
		if diff := cmp.Diff([]string{"AK1"}, keys(k)); diff != "" {
			t.Errorf("credentials: -want, +got:\n%s", diff)
		}
	})

	t.Run("CreateFailsAfterRecording", func(t *testing.T) {
		k := &fakeKeystone{creds: map[string]openstack.EC2Credential{}, failCreate: errors.New("keystone is down")}
		a := &savingAnnotator{}
		e := newExternal(k, a, &now)
		cr := &v1alpha1.Contract{}
		if _, err := e.Create(ctx, cr); err == nil {
			t.Fatal("Create succeeded while Keystone failed")
		}
		// Nothing was made: Observe says so, and the next Create makes (and records) new keys.
		if o, err := e.Observe(ctx, cr); err != nil || o.ResourceExists {
			t.Fatalf("Observe after a failed create: exists %v, error %v", o.ResourceExists, err)
		}
		k.failCreate = nil
		if _, err := e.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"AK2"}, keys(k)); diff != "" {
			t.Errorf("credentials: -want, +got:\n%s", diff)
		}
	})

	t.Run("RotationCannotRecordTheNewKey", func(t *testing.T) {
		k := &fakeKeystone{creds: map[string]openstack.EC2Credential{}}
		// Update 1 records the pending key; update 2, which would publish it, fails.
		a := &savingAnnotator{fail: map[int]bool{2: true}}
		e := newExternal(k, a, &now)
		cr := &v1alpha1.Contract{Spec: v1alpha1.ContractSpec{ForProvider: v1alpha1.ContractParameters{Rotation: &v1alpha1.KeyRotation{Request: ptr.To("r1")}}}}
		k.creds["AK0"] = openstack.EC2Credential{Access: "AK0", Secret: "SK0"}
		meta.SetExternalName(cr, "AK0")
		writeRotation(cr, rotation{createdAt: t0})
		if _, err := e.Update(ctx, cr); err == nil {
			t.Fatal("Update succeeded although the new key could not be recorded")
		}
		if _, ok := k.creds["AK1"]; !ok {
			t.Fatal("the new key should exist, recorded as pending")
		}
		// The next reconcile starts from what the API server holds, and finishes the rotation
		// with the key already made: no second key, none untracked.
		next := cr.DeepCopy()
		next.SetAnnotations(a.saved)
		if readRotation(next).pending != "AK1" {
			t.Fatalf("pending key recorded: %q, want AK1", readRotation(next).pending)
		}
		u, err := e.Update(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		if meta.GetExternalName(next) != "AK1" || readRotation(next).previous != "AK0" || readRotation(next).pending != "" {
			t.Errorf("after the finished rotation: current %q, previous %q, pending %q", meta.GetExternalName(next), readRotation(next).previous, readRotation(next).pending)
		}
		if got := string(u.ConnectionDetails[v1alpha1.ConnectionAWSSecretKey]); got != "SK1" {
			t.Errorf("published secret %q, want SK1", got)
		}
		if diff := cmp.Diff([]string{"AK0", "AK1"}, keys(k)); diff != "" {
			t.Errorf("credentials: -want, +got:\n%s", diff)
		}
		// Delete revokes both.
		if _, err := e.Delete(ctx, next); err != nil {
			t.Fatal(err)
		}
		if len(k.creds) != 0 {
			t.Errorf("credentials left after delete: %v", keys(k))
		}
	})

	t.Run("DeleteRevokesAPendingKey", func(t *testing.T) {
		k := &fakeKeystone{creds: map[string]openstack.EC2Credential{"AK7": {Access: "AK7"}}}
		e := newExternal(k, nopAnnotator{}, &now)
		cr := &v1alpha1.Contract{}
		writeRotation(cr, rotation{pending: "AK7"})
		if _, err := e.Delete(ctx, cr); err != nil {
			t.Fatal(err)
		}
		if len(k.creds) != 0 {
			t.Errorf("credentials left after delete: %v", keys(k))
		}
	})
}

func TestScheduleOfABadStoredValue(t *testing.T) {
	cr := &v1alpha1.Contract{Spec: v1alpha1.ContractSpec{ForProvider: v1alpha1.ContractParameters{Rotation: &v1alpha1.KeyRotation{Period: ptr.To(common.Duration("30days"))}}}}
	_, err := scheduleOf(cr)
	if err == nil || !strings.Contains(err.Error(), "spec.forProvider.rotation.period") {
		t.Errorf("scheduleOf(30days): %v, want an error naming the field", err)
	}
}

// A tenant can name any access key in its Contract's annotations (access key IDs are no
// secret): keys the Contract did not make are neither published nor deleted.
func TestKeysOfOthersAreNeverPublishedOrDeleted(t *testing.T) {
	ctx := context.Background()
	now := t0
	k := &fakeKeystone{creds: map[string]openstack.EC2Credential{"VICTIM": {Access: "VICTIM", Secret: "VICTIM-SECRET", Owner: "uid-of-another-contract"}}}
	e := newExternal(k, nopAnnotator{}, &now)
	thief := &v1alpha1.Contract{}
	thief.SetUID("uid-of-the-thief")
	meta.SetExternalName(thief, "VICTIM")
	writeRotation(thief, rotation{previous: "VICTIM", previousExpireAt: t0.Add(-time.Hour), pending: "VICTIM"})

	o, err := e.Observe(ctx, thief)
	if err == nil || !strings.Contains(err.Error(), "was not made by this Contract") {
		t.Errorf("Observe: %v, want a refusal", err)
	}
	if len(o.ConnectionDetails) != 0 {
		t.Errorf("Observe published another Contract's keys: %v", o.ConnectionDetails)
	}
	if _, err := e.Update(ctx, thief); err != nil {
		t.Logf("Update: %v", err)
	}
	if _, err := e.Delete(ctx, thief); err != nil {
		t.Fatal(err)
	}
	if _, ok := k.creds["VICTIM"]; !ok {
		t.Error("another Contract's key was deleted")
	}
}
