package bucket

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
)

// fakeS3 is one bucket in memory; writes are counted.
type fakeS3 struct {
	acl         s3.ACL
	policy      string
	noPolicy    bool
	versioning  string
	writes      []string
	reads       int
	notEmpty    bool
	deleted     bool
	emptied     bool
	createError error
	// aclError, when set, is GetACL's answer.
	aclError error
}

var _ s3.Buckets = &fakeS3{}

func (f *fakeS3) CreateBucket(context.Context, string) error { return f.createError }
func (f *fakeS3) BucketExists(context.Context, string) (bool, error) {
	return !f.deleted, nil
}

func (f *fakeS3) DeleteBucket(context.Context, string) error {
	if f.notEmpty {
		return notEmptyErr{}
	}
	f.deleted = true
	return nil
}
func (f *fakeS3) EmptyBucket(context.Context, string) error {
	f.emptied, f.notEmpty = true, false
	return nil
}
func (f *fakeS3) GetACL(context.Context, string) (*s3.ACL, error) {
	f.reads++
	if f.aclError != nil {
		return nil, f.aclError
	}
	a := f.acl
	return &a, nil
}

func (f *fakeS3) PutACL(_ context.Context, _ string, a s3.ACL) error {
	f.writes = append(f.writes, "acl")
	f.acl.Grants = a.Grants
	return nil
}

func (f *fakeS3) PutCannedACL(_ context.Context, _ string, canned string) error {
	f.writes = append(f.writes, "canned:"+canned)
	f.acl.Grants, _ = s3.ExpandCannedACL(canned, f.acl.Owner)
	return nil
}

func (f *fakeS3) GetPolicy(context.Context, string) (string, error) {
	f.reads++
	if f.noPolicy {
		return "", notImplementedErr{}
	}
	return f.policy, nil
}

func (f *fakeS3) PutPolicy(_ context.Context, _ string, p string) error {
	if f.noPolicy {
		return notImplementedErr{}
	}
	f.writes = append(f.writes, "policy")
	f.policy = p
	return nil
}
func (f *fakeS3) DeletePolicy(context.Context, string) error { f.policy = ""; return nil }
func (f *fakeS3) GetVersioning(context.Context, string) (string, error) {
	f.reads++
	return f.versioning, nil
}

func (f *fakeS3) PutVersioning(_ context.Context, _ string, v string) error {
	f.writes = append(f.writes, "versioning")
	f.versioning = v
	return nil
}

// The s3 package classifies errors by S3 error code; these fakes carry one.
type notEmptyErr struct{}

func (notEmptyErr) Error() string     { return "BucketNotEmpty" }
func (notEmptyErr) ErrorCode() string { return "BucketNotEmpty" }
func (notEmptyErr) ErrorMessage() string {
	return "The bucket you tried to delete is not empty"
}
func (notEmptyErr) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

type accessDeniedErr struct{}

func (accessDeniedErr) Error() string                 { return "AccessDenied" }
func (accessDeniedErr) ErrorCode() string             { return "AccessDenied" }
func (accessDeniedErr) ErrorMessage() string          { return "access denied" }
func (accessDeniedErr) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

type notImplementedErr struct{}

func (notImplementedErr) Error() string                 { return "NotImplemented" }
func (notImplementedErr) ErrorCode() string             { return "NotImplemented" }
func (notImplementedErr) ErrorMessage() string          { return "not implemented" }
func (notImplementedErr) ErrorFault() smithy.ErrorFault { return smithy.FaultServer }

var owner = s3.Owner{ID: "demo:demo", DisplayName: "demo:demo"}

func bucket(p v1alpha1.BucketParameters) *v1alpha1.Bucket {
	b := &v1alpha1.Bucket{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, Spec: v1alpha1.BucketSpec{ForProvider: p}}
	meta.SetExternalName(b, "b")
	return b
}

func reconcileOnce(t *testing.T, e *external, cr *v1alpha1.Bucket) bool {
	t.Helper()
	o, err := e.Observe(context.Background(), cr)
	if err != nil {
		t.Fatal(err)
	}
	if !o.ResourceUpToDate {
		if _, err := e.Update(context.Background(), cr); err != nil {
			t.Fatal(err)
		}
	}
	return o.ResourceUpToDate
}

// TestCreateConfiguresTheNewBucket: Create sets the canned ACL, the policy (where the server
// has policies) and versioning of the bucket it made, so the observation after it finds
// nothing to change.
func TestCreateConfiguresTheNewBucket(t *testing.T) {
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}`
	cases := map[string]struct {
		server     *fakeS3
		params     v1alpha1.BucketParameters
		wantWrites []string
	}{
		"Everything": {
			server:     &fakeS3{acl: s3.ACL{Owner: owner}},
			params:     v1alpha1.BucketParameters{CannedACL: ptr.To("public-read"), Versioning: ptr.To("Enabled"), Policy: &apiextensionsv1.JSON{Raw: []byte(policy)}},
			wantWrites: []string{"canned:public-read", "policy", "versioning"},
		},
		"ServerWithoutPolicies": {
			server:     &fakeS3{acl: s3.ACL{Owner: owner}, noPolicy: true},
			params:     v1alpha1.BucketParameters{Versioning: ptr.To("Enabled"), Policy: &apiextensionsv1.JSON{Raw: []byte(policy)}},
			wantWrites: []string{"versioning"},
		},
		"SuspendedIsWhatANewBucketHas": {
			server: &fakeS3{acl: s3.ACL{Owner: owner}},
			params: v1alpha1.BucketParameters{Versioning: ptr.To("Suspended")},
		},
	}
	t.Run("AnUnreadableBucketIsNotConfigured", func(t *testing.T) {
		// Observe could not read the ACL of a bucket of this name (its policy denies these
		// credentials, say), and the create answers "already yours": nothing is written.
		f := &fakeS3{acl: s3.ACL{Owner: owner}, aclError: accessDeniedErr{}}
		cr := bucket(v1alpha1.BucketParameters{CannedACL: ptr.To("public-read"), Versioning: ptr.To("Enabled")})
		meta.SetExternalName(cr, "")
		e := &external{s3: f, record: event.NewNopRecorder(), noPolicy: &sync.Map{}}
		if o, err := e.Observe(context.Background(), cr); err != nil || o.ResourceExists {
			t.Fatalf("Observe of an unreadable bucket not ours: %+v, %v; want it absent", o, err)
		}
		if _, err := e.Create(context.Background(), cr); err != nil {
			t.Fatal(err)
		}
		if len(f.writes) != 0 {
			t.Errorf("Create wrote %v to a bucket it could not read", f.writes)
		}
	})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := bucket(tc.params)
			meta.SetExternalName(cr, "")
			e := &external{s3: tc.server, record: event.NewNopRecorder(), noPolicy: &sync.Map{}}
			if _, err := e.Create(context.Background(), cr); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantWrites, tc.server.writes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("writes of Create: -want, +got:\n%s", diff)
			}
			if got := meta.GetExternalName(cr); got != "b" {
				t.Errorf("external name %q, want b", got)
			}
			o, err := e.Observe(context.Background(), cr)
			if err != nil {
				t.Fatal(err)
			}
			if !o.ResourceUpToDate {
				t.Error("the bucket Create made is not up to date")
			}
		})
	}
}

func TestNothingIsRewrittenWhenNothingDiffers(t *testing.T) {
	publicRead, _ := s3.ExpandCannedACL("public-read", owner)
	cases := map[string]struct {
		reason string
		server *fakeS3
		params v1alpha1.BucketParameters
	}{
		"CannedACLAgainstTheGrantsItStandsFor": {
			reason: "The server reports grants, not the canned name: they mean the same.",
			server: &fakeS3{acl: s3.ACL{Owner: owner, Grants: append([]s3.Grant{publicRead[1]}, publicRead[0])}},
			params: v1alpha1.BucketParameters{CannedACL: ptr.To("public-read")},
		},
		"GrantsWithTheOwnerImplied": {
			reason: "The owner's FULL_CONTROL is part of every grant list.",
			server: &fakeS3{acl: s3.ACL{Owner: owner, Grants: []s3.Grant{
				{Permission: "FULL_CONTROL", Grantee: s3.Grantee{Type: s3.GranteeID, Value: owner.ID, DisplayName: "whatever"}},
				{Permission: "READ", Grantee: s3.Grantee{Type: s3.GranteeID, Value: "demo2:demo2"}},
			}}},
			params: v1alpha1.BucketParameters{GrantRead: []v1alpha1.Grantee{{Type: "id", Value: "demo2:demo2"}}},
		},
		"PolicyReorderedAndReformatted": {
			server: &fakeS3{acl: s3.ACL{Owner: owner}, policy: `{"Statement":[{"Action":["s3:GetObject"],"Effect":"Allow","Principal":"*","Resource":"arn:aws:s3:::b/*"}],"Version":"2012-10-17"}`},
			params: v1alpha1.BucketParameters{Policy: &apiextensionsv1.JSON{Raw: []byte(`{"Version": "2012-10-17", "Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": ["arn:aws:s3:::b/*"]}}`)}},
		},
		"NeverVersionedCountsAsSuspended": {
			server: &fakeS3{acl: s3.ACL{Owner: owner}},
			params: v1alpha1.BucketParameters{Versioning: ptr.To("Suspended")},
		},
		"UnmanagedACLIsLeftAlone": {
			server: &fakeS3{acl: s3.ACL{Owner: owner, Grants: publicRead}},
			params: v1alpha1.BucketParameters{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{s3: tc.server, record: event.NewNopRecorder(), noPolicy: &sync.Map{}}
			cr := bucket(tc.params)
			if !reconcileOnce(t, e, cr) || len(tc.server.writes) != 0 {
				t.Errorf("%s\nup to date: false, writes %v; want nothing written", tc.reason, tc.server.writes)
			}
			if cr.GetCondition(xpv2.TypeReady).Status != "True" {
				t.Errorf("%s\nnot Ready: %+v", tc.reason, cr.GetCondition(xpv2.TypeReady))
			}
		})
	}
}

func TestDriftIsCorrectedOnce(t *testing.T) {
	f := &fakeS3{acl: s3.ACL{Owner: owner}, policy: `{"Version":"2012-10-17","Statement":[]}`}
	e := &external{s3: f, record: event.NewNopRecorder(), noPolicy: &sync.Map{}}
	cr := bucket(v1alpha1.BucketParameters{
		CannedACL:  ptr.To("public-read"),
		Policy:     &apiextensionsv1.JSON{Raw: []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}`)},
		Versioning: ptr.To("Enabled"),
	})
	if reconcileOnce(t, e, cr) {
		t.Fatal("drift not seen")
	}
	want := []string{"canned:public-read", "policy", "versioning"}
	if len(f.writes) != 3 || f.writes[0] != want[0] || f.writes[1] != want[1] || f.writes[2] != want[2] {
		t.Errorf("writes: got %v, want %v", f.writes, want)
	}
	e.observed = nil
	if !reconcileOnce(t, e, cr) || len(f.writes) != 3 {
		t.Errorf("second reconcile wrote again: %v", f.writes)
	}
}

func TestPolicyOnAServerWithoutPolicies(t *testing.T) {
	f := &fakeS3{acl: s3.ACL{Owner: owner}, noPolicy: true}
	e := &external{s3: f, endpoint: "http://swift", record: event.NewNopRecorder(), noPolicy: &sync.Map{}}
	cr := bucket(v1alpha1.BucketParameters{Policy: &apiextensionsv1.JSON{Raw: []byte(`{"Version":"2012-10-17","Statement":[]}`)}})
	if !reconcileOnce(t, e, cr) {
		t.Error("an unsupported policy must not make the bucket look out of date forever")
	}
	if c := cr.GetCondition(xpv2.TypeReady); c.Status != "False" || c.Message != msgNoPolicySupport {
		t.Errorf("Ready: %+v, want False saying the server has no policies", c)
	}
	reads := f.reads
	e.observed = nil
	reconcileOnce(t, e, cr)
	if f.reads-reads != 2 {
		t.Errorf("a later poll made %d reads, want 2 (no policy read once the server said 501)", f.reads-reads)
	}
}

func TestDeleteNeverLosesDataUnlessAsked(t *testing.T) {
	f := &fakeS3{acl: s3.ACL{Owner: owner}, notEmpty: true}
	e := &external{s3: f, record: event.NewNopRecorder(), noPolicy: &sync.Map{}}
	cr := bucket(v1alpha1.BucketParameters{})
	if _, err := e.Delete(context.Background(), cr); err == nil || f.deleted || f.emptied {
		t.Fatalf("non-empty bucket: error %v, deleted %v, emptied %v; want an error and nothing lost", err, f.deleted, f.emptied)
	}
	cr.Spec.ForProvider.ForceDestroy = true
	if _, err := e.Delete(context.Background(), cr); err != nil || !f.deleted || !f.emptied {
		t.Fatalf("forceDestroy: error %v, deleted %v, emptied %v", err, f.deleted, f.emptied)
	}
}

// A bucket this resource did not create is managed only when the spec asks, or when this
// resource's own create was cut short after making it; anything else is left alone.
func TestAnExistingBucketIsAdoptedOnlyWhenAsked(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		adopt     bool
		pending   time.Time
		succeeded time.Time
		wantErr   bool
	}{
		"NotAsked":          {wantErr: true},
		"Asked":             {adopt: true},
		"CreateCutShort":    {pending: t0},
		"CreateEndedBefore": {pending: t0, succeeded: t0.Add(time.Second), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{s3: &fakeS3{acl: s3.ACL{Owner: owner}}, record: event.NewNopRecorder(), noPolicy: &sync.Map{}}
			cr := bucket(v1alpha1.BucketParameters{AdoptExisting: tc.adopt})
			meta.SetExternalName(cr, "")
			if !tc.pending.IsZero() {
				meta.SetExternalCreatePending(cr, tc.pending)
			}
			if !tc.succeeded.IsZero() {
				meta.SetExternalCreateSucceeded(cr, tc.succeeded)
			}
			o, err := e.Observe(context.Background(), cr)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "adoptExisting") {
					t.Errorf("Observe: %v, want an error pointing at adoptExisting", err)
				}
				if meta.GetExternalName(cr) != "" {
					t.Errorf("external name %q set on a bucket that was not adopted", meta.GetExternalName(cr))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !o.ResourceExists || !o.ResourceLateInitialized || meta.GetExternalName(cr) != "b" {
				t.Errorf("adopted: exists %v, late-initialized %v, external name %q; want the name recorded", o.ResourceExists, o.ResourceLateInitialized, meta.GetExternalName(cr))
			}
		})
	}
}
