package securitygroup

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gophercloud/gophercloud/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
)

// fakeNeutron implements the client interfaces with function fields; unset ones fail the call.
type fakeNeutron struct {
	get       func(id string) (*openstack.SecurityGroup, error)
	listByTag func(tag string) ([]openstack.SecurityGroup, error)
	create    func(s openstack.SecurityGroupSettings, tags []string) (*openstack.SecurityGroup, error)
	update    func(id string, s openstack.SecurityGroupSettings, revision int64) (*openstack.SecurityGroup, error)
	tag       func(id string, tags []string) error
	del       func(id string) error
	rules     func(rules []openstack.Rule) ([]openstack.Rule, error)
	delRule   func(id string) error
	ports     func(sg string) ([]openstack.Port, error)
}

var errUnexpectedCall = errors.New("unexpected call")

func (f *fakeNeutron) GetSecurityGroup(_ context.Context, id string) (*openstack.SecurityGroup, error) {
	if f.get == nil {
		return nil, errUnexpectedCall
	}
	return f.get(id)
}

func (f *fakeNeutron) ListSecurityGroupsByTag(_ context.Context, tag string) ([]openstack.SecurityGroup, error) {
	if f.listByTag == nil {
		return nil, errUnexpectedCall
	}
	return f.listByTag(tag)
}

func (f *fakeNeutron) CreateSecurityGroup(_ context.Context, s openstack.SecurityGroupSettings, tags []string, _ string) (*openstack.SecurityGroup, error) {
	if f.create == nil {
		return nil, errUnexpectedCall
	}
	return f.create(s, tags)
}

func (f *fakeNeutron) UpdateSecurityGroup(_ context.Context, id string, s openstack.SecurityGroupSettings, revision int64) (*openstack.SecurityGroup, error) {
	if f.update == nil {
		return nil, errUnexpectedCall
	}
	return f.update(id, s, revision)
}

func (f *fakeNeutron) ReplaceSecurityGroupTags(_ context.Context, id string, tags []string) error {
	if f.tag == nil {
		return errUnexpectedCall
	}
	return f.tag(id, tags)
}

func (f *fakeNeutron) DeleteSecurityGroup(_ context.Context, id string) error {
	if f.del == nil {
		return errUnexpectedCall
	}
	return f.del(id)
}

func (f *fakeNeutron) CreateRules(_ context.Context, r []openstack.Rule) ([]openstack.Rule, error) {
	if f.rules == nil {
		return nil, errUnexpectedCall
	}
	return f.rules(r)
}

func (f *fakeNeutron) DeleteRule(_ context.Context, id string) error {
	if f.delRule == nil {
		return errUnexpectedCall
	}
	return f.delRule(id)
}

func (f *fakeNeutron) ListPortsWithSecurityGroup(_ context.Context, sg string) ([]openstack.Port, error) {
	if f.ports == nil {
		return nil, errUnexpectedCall
	}
	return f.ports(sg)
}

func httpError(code int, body string) error {
	return gophercloud.ErrUnexpectedResponseCode{Actual: code, Body: []byte(body)}
}

const (
	uid = "0b5c3b2e-1f0a-4c77-9a52-3a1e4f2d6c10"
	sid = "5d9a1c64-0a3b-4a58-8e0e-2f6a7b8c9d01"
)

type sgOption func(*v1alpha1.SecurityGroup)

func withExternalName(n string) sgOption {
	return func(cr *v1alpha1.SecurityGroup) { meta.SetExternalName(cr, n) }
}

func withParams(p v1alpha1.SecurityGroupParameters) sgOption {
	return func(cr *v1alpha1.SecurityGroup) { cr.Spec.ForProvider = p }
}

// withCreatePending marks the resource as crossplane-runtime does before it calls Create.
func withCreatePending() sgOption {
	return func(cr *v1alpha1.SecurityGroup) {
		meta.SetExternalCreatePending(cr, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	}
}

func withPolicies(p ...xpv2.ManagementAction) sgOption {
	return func(cr *v1alpha1.SecurityGroup) { cr.Spec.ManagementPolicies = p }
}

func securityGroup(o ...sgOption) *v1alpha1.SecurityGroup {
	cr := &v1alpha1.SecurityGroup{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: uid}}
	for _, fn := range o {
		fn(cr)
	}
	return cr
}

// inSync is the Neutron group that matches securityGroup(withParams(webParams)).
func inSync() *openstack.SecurityGroup {
	return &openstack.SecurityGroup{
		ID: sid, Name: "web", Description: "", Stateful: ptr.To(true), RevisionNumber: 4,
		Tags: []string{identityTagPrefix + uid},
		Rules: []openstack.Rule{
			{ID: "r1", Direction: "egress", EtherType: "IPv4"},
			{ID: "r2", Direction: "egress", EtherType: "IPv6"},
			{ID: "r3", Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp"), PortRangeMin: ptr.To[int32](22), PortRangeMax: ptr.To[int32](22)},
		},
	}
}

var webParams = v1alpha1.SecurityGroupParameters{
	Name: ptr.To("web"), Description: ptr.To(""), Stateful: ptr.To(true),
	Rules: []v1alpha1.SecurityGroupRule{{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("6"), PortRangeMin: ptr.To[int32](22), PortRangeMax: ptr.To[int32](22)}},
}

func TestObserve(t *testing.T) {
	type want struct {
		o            managed.ExternalObservation
		err          error
		externalName string
		ready        bool
	}
	cases := map[string]struct {
		reason string
		n      *fakeNeutron
		cr     *v1alpha1.SecurityGroup
		want   want
	}{
		"NeverCreatedIsNotLookedUp": {
			reason: "A resource whose create was never tried has no group to look for: Neutron is not asked.",
			n:      &fakeNeutron{},
			cr:     securityGroup(withParams(webParams)),
			want:   want{o: managed.ExternalObservation{ResourceExists: false}},
		},
		"ReplacedWithoutAnnotationsIsLookedUp": {
			reason: "A resource whose annotations were lost (kubectl replace) but whose status saw a group is looked up by its tag, and adopts it.",
			n: &fakeNeutron{listByTag: func(string) ([]openstack.SecurityGroup, error) {
				return []openstack.SecurityGroup{*inSync()}, nil
			}},
			cr: securityGroup(withParams(webParams), func(cr *v1alpha1.SecurityGroup) { cr.Status.AtProvider.ID = sid }),
			want: want{
				o:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				externalName: sid, ready: true,
			},
		},
		"NoExternalNameNothingTagged": {
			reason: "A resource whose create was tried but made nothing does not exist.",
			n:      &fakeNeutron{listByTag: func(string) ([]openstack.SecurityGroup, error) { return nil, nil }},
			cr:     securityGroup(withCreatePending(), withParams(webParams)),
			want:   want{o: managed.ExternalObservation{ResourceExists: false}},
		},
		"NoExternalNameAdoptsTaggedGroup": {
			reason: "A group an interrupted Create made is adopted, not duplicated.",
			n: &fakeNeutron{listByTag: func(tag string) ([]openstack.SecurityGroup, error) {
				if tag != identityTagPrefix+uid {
					return nil, errors.Errorf("looked up by %q", tag)
				}
				return []openstack.SecurityGroup{*inSync()}, nil
			}},
			cr: securityGroup(withCreatePending(), withParams(webParams)),
			want: want{
				o:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				externalName: sid, ready: true,
			},
		},
		"SeveralTaggedGroupsIsAnError": {
			reason: "Two groups with one resource's tag need a person to decide.",
			n: &fakeNeutron{listByTag: func(string) ([]openstack.SecurityGroup, error) {
				return []openstack.SecurityGroup{{ID: "a"}, {ID: "b"}}, nil
			}},
			cr:   securityGroup(withCreatePending(), withParams(webParams)),
			want: want{err: errors.Errorf(errFmtSeveralTagged, 2, identityTagPrefix+uid, "a, b")},
		},
		"GoneInNeutron": {
			reason: "A group deleted behind our back does not exist (and will be created).",
			n:      &fakeNeutron{get: func(string) (*openstack.SecurityGroup, error) { return nil, httpError(http.StatusNotFound, "") }},
			cr:     securityGroup(withExternalName(sid), withParams(webParams)),
			want:   want{o: managed.ExternalObservation{ResourceExists: false}, externalName: sid},
		},
		"GetFails": {
			n:    &fakeNeutron{get: func(string) (*openstack.SecurityGroup, error) { return nil, errBoom }},
			cr:   securityGroup(withExternalName(sid), withParams(webParams)),
			want: want{err: errors.Wrap(errBoom, errGetSecurityGroup), externalName: sid},
		},
		"InSync": {
			reason: "Equivalent rules (tcp and 6) are in sync: nothing to update.",
			n:      &fakeNeutron{get: func(string) (*openstack.SecurityGroup, error) { return inSync(), nil }},
			cr:     securityGroup(withExternalName(sid), withParams(webParams)),
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, externalName: sid, ready: true},
		},
		"RuleAddedByHand": {
			n: &fakeNeutron{get: func(string) (*openstack.SecurityGroup, error) {
				sg := inSync()
				sg.Rules = append(sg.Rules, openstack.Rule{ID: "r4", Direction: "ingress", EtherType: "IPv4"})
				return sg, nil
			}},
			cr:   securityGroup(withExternalName(sid), withParams(webParams)),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false}, externalName: sid},
		},
		"RenamedByHand": {
			n: &fakeNeutron{get: func(string) (*openstack.SecurityGroup, error) {
				sg := inSync()
				sg.Name = "other"
				return sg, nil
			}},
			cr:   securityGroup(withExternalName(sid), withParams(webParams)),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false}, externalName: sid},
		},
		"TagRemovedByHand": {
			n: &fakeNeutron{get: func(string) (*openstack.SecurityGroup, error) {
				sg := inSync()
				sg.Tags = nil
				return sg, nil
			}},
			cr:   securityGroup(withExternalName(sid), withParams(webParams)),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false}, externalName: sid},
		},
		"ObserveOnlyIsReadyAsItIs": {
			reason: "An imported group is usable without being ours to change; unset fields are filled in.",
			n: &fakeNeutron{get: func(string) (*openstack.SecurityGroup, error) {
				sg := inSync()
				sg.Tags = nil
				return sg, nil
			}},
			cr:   securityGroup(withExternalName(sid), withPolicies(xpv2.ManagementActionObserve)),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false, ResourceLateInitialized: true}, externalName: sid, ready: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &external{groups: tc.n, ports: tc.n, record: event.NewNopRecorder()}
			got, err := e.Observe(context.Background(), tc.cr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, got); diff != "" {
				t.Errorf("%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.externalName, meta.GetExternalName(tc.cr)); diff != "" {
				t.Errorf("%s\nexternal name: -want, +got:\n%s", tc.reason, diff)
			}
			if got := tc.cr.GetCondition(xpv2.TypeReady).Status == "True"; got != tc.want.ready {
				t.Errorf("%s\nReady: got %v, want %v", tc.reason, got, tc.want.ready)
			}
		})
	}
}

var errBoom = errors.New("boom")

func TestCreate(t *testing.T) {
	type want struct {
		err          error
		externalName string
		createdRules []openstack.Rule
		tags         []string
		// told is what the listing was told of the written group (nil: to read it anew).
		told *openstack.SecurityGroup
	}
	cases := map[string]struct {
		reason string
		cr     *v1alpha1.SecurityGroup
		create func(s openstack.SecurityGroupSettings, tags []string) (*openstack.SecurityGroup, error)
		rules  func(r []openstack.Rule) ([]openstack.Rule, error)
		want   want
	}{
		"CreatesGroupAndRules": {
			reason: "The name defaults to the resource's; rules are created in one bulk call.",
			cr:     securityGroup(withParams(v1alpha1.SecurityGroupParameters{Tags: []string{"team:web"}, Rules: webParams.Rules})),
			create: func(s openstack.SecurityGroupSettings, tags []string) (*openstack.SecurityGroup, error) {
				if s.Name != "web" {
					return nil, errors.Errorf("name %q", s.Name)
				}
				sg := inSync()
				sg.Rules = sg.Rules[:2]
				return sg, nil
			},
			want: want{
				externalName: sid,
				tags:         []string{identityTagPrefix + uid, "team:web"},
				createdRules: []openstack.Rule{{SecurityGroupID: sid, Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("6"), PortRangeMin: ptr.To[int32](22), PortRangeMax: ptr.To[int32](22)}},
				// Neutron's two default rules, which the spec keeps, and the one created.
				told: func() *openstack.SecurityGroup {
					sg := inSync()
					sg.Rules = append(sg.Rules[:2], openstack.Rule{ID: "new", SecurityGroupID: sid, Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("6"), PortRangeMin: ptr.To[int32](22), PortRangeMax: ptr.To[int32](22)})
					return sg
				}(),
			},
		},
		"RulesFailedGroupIsReadAnew": {
			reason: "A create whose rules failed tells the listing nothing of the group: the next observation reads it.",
			cr:     securityGroup(withParams(webParams)),
			create: func(openstack.SecurityGroupSettings, []string) (*openstack.SecurityGroup, error) {
				sg := inSync()
				sg.Rules = sg.Rules[:2]
				return sg, nil
			},
			rules: func([]openstack.Rule) ([]openstack.Rule, error) { return nil, errBoom },
			want: want{
				err: errors.Wrap(errBoom, errCreateRules), externalName: sid, tags: []string{identityTagPrefix + uid},
				createdRules: []openstack.Rule{{SecurityGroupID: sid, Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("6"), PortRangeMin: ptr.To[int32](22), PortRangeMax: ptr.To[int32](22)}},
			},
		},
		"TaggingFailedStillRecordsTheID": {
			reason: "If Neutron created the group but tagging failed, its ID must still be recorded.",
			cr:     securityGroup(withParams(webParams)),
			create: func(openstack.SecurityGroupSettings, []string) (*openstack.SecurityGroup, error) {
				return inSync(), errBoom
			},
			want: want{err: errors.Wrap(errBoom, errCreateSecurityGrp), externalName: sid, tags: []string{identityTagPrefix + uid}},
		},
		"CreateFails": {
			cr:     securityGroup(withParams(webParams)),
			create: func(openstack.SecurityGroupSettings, []string) (*openstack.SecurityGroup, error) { return nil, errBoom },
			want:   want{err: errors.Wrap(errBoom, errCreateSecurityGrp), tags: []string{identityTagPrefix + uid}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var gotTags []string
			var gotRules []openstack.Rule
			n := &fakeNeutron{
				create: func(s openstack.SecurityGroupSettings, tags []string) (*openstack.SecurityGroup, error) {
					gotTags = tags
					return tc.create(s, tags)
				},
				rules: func(r []openstack.Rule) ([]openstack.Rule, error) {
					gotRules = slices.Clone(r)
					if tc.rules != nil {
						return tc.rules(r)
					}
					created := slices.Clone(r)
					for i := range created {
						created[i].ID = "new"
					}
					return created, nil
				},
			}
			l := &toldListing{}
			e := &external{groups: n, ports: n, record: event.NewNopRecorder(), listing: l}
			_, err := e.Create(context.Background(), tc.cr)
			if tc.want.externalName != "" {
				if diff := cmp.Diff([]string{tc.want.externalName}, l.wrote); diff != "" {
					t.Errorf("%s\ngroups the listing was told were written: -want, +got:\n%s", tc.reason, diff)
				}
			}
			if diff := cmp.Diff(tc.want.told, l.told); diff != "" {
				t.Errorf("%s\nwhat the listing was told of the group: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nCreate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.externalName, meta.GetExternalName(tc.cr)); diff != "" {
				t.Errorf("%s\nexternal name: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.tags, gotTags); diff != "" {
				t.Errorf("%s\ntags: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.createdRules, gotRules, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ncreated rules: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// toldListing records what a listing is told of writes.
type toldListing struct {
	wrote []string
	told  *openstack.SecurityGroup
}

func (l *toldListing) Observe(context.Context, string) (*openstack.SecurityGroup, error) {
	return nil, errUnexpectedCall
}

func (l *toldListing) Wrote(id string, now *openstack.SecurityGroup) {
	l.wrote = append(l.wrote, id)
	l.told = now
}

func (l *toldListing) Watch(string, []string, func()) {}
func (l *toldListing) Forget(string)                  {}

func TestUpdate(t *testing.T) {
	type calls struct {
		updatedRevision int64
		tags            []string
		deletedRules    []string
		createdRules    int
	}
	cases := map[string]struct {
		reason   string
		observed func() *openstack.SecurityGroup
		update   error
		want     calls
		wantErr  error
	}{
		"RenamedByHandIsRenamedBackWithRevisionCheck": {
			observed: func() *openstack.SecurityGroup { sg := inSync(); sg.Name = "x"; return sg },
			want:     calls{updatedRevision: 4},
		},
		"ConcurrentChangeIsRetried": {
			reason:   "A 412 from If-Match means someone changed the group since we read it.",
			observed: func() *openstack.SecurityGroup { sg := inSync(); sg.Name = "x"; return sg },
			update:   httpError(http.StatusPreconditionFailed, `{"NeutronError": {"message": "Constrained to 4, but current revision is 5"}}`),
			want:     calls{updatedRevision: 4},
			wantErr:  errors.New(errUpdateConflict),
		},
		"OnlyRulesDiffer": {
			reason: "Extra rules are deleted and missing ones created; the group is not touched.",
			observed: func() *openstack.SecurityGroup {
				sg := inSync()
				sg.Rules = append(sg.Rules[:2], openstack.Rule{ID: "hand", Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("udp")})
				return sg
			},
			want: calls{deletedRules: []string{"hand"}, createdRules: 1},
		},
		"TagsRestored": {
			observed: func() *openstack.SecurityGroup { sg := inSync(); sg.Tags = []string{"x"}; return sg },
			want:     calls{tags: []string{identityTagPrefix + uid}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got calls
			n := &fakeNeutron{
				get: func(string) (*openstack.SecurityGroup, error) { return tc.observed(), nil },
				update: func(_ string, _ openstack.SecurityGroupSettings, revision int64) (*openstack.SecurityGroup, error) {
					got.updatedRevision = revision
					return inSync(), tc.update
				},
				tag:     func(_ string, tags []string) error { got.tags = tags; return nil },
				delRule: func(id string) error { got.deletedRules = append(got.deletedRules, id); return nil },
				rules:   func(r []openstack.Rule) ([]openstack.Rule, error) { got.createdRules += len(r); return r, nil },
			}
			e := &external{groups: n, ports: n, record: event.NewNopRecorder()}
			_, err := e.Update(context.Background(), securityGroup(withExternalName(sid), withParams(webParams)))
			if diff := cmp.Diff(tc.wantErr, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nUpdate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(calls{})); diff != "" {
				t.Errorf("%s\nUpdate(...) calls: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	inUse := httpError(http.StatusConflict, `{"NeutronError": {"type": "SecurityGroupInUse", "message": "Security Group x in use."}}`)
	cases := map[string]struct {
		reason string
		del    error
		ports  []openstack.Port
		want   error
	}{
		"Deleted":      {},
		"AlreadyGone":  {reason: "A group that is gone is deleted.", del: httpError(http.StatusNotFound, "")},
		"OtherFailure": {del: errBoom, want: errors.Wrap(errBoom, errDeleteSecurityGrp)},
		"InUseNamesPorts": {
			reason: "The condition must tell which ports still use the group.",
			del:    inUse,
			ports:  []openstack.Port{{ID: "p1", DeviceID: "srv1"}, {ID: "p2"}},
			want:   errors.Errorf(errFmtInUse, 2, "p1 (server srv1), p2"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := &fakeNeutron{
				del:   func(string) error { return tc.del },
				ports: func(string) ([]openstack.Port, error) { return tc.ports, nil },
			}
			e := &external{groups: n, ports: n, record: event.NewNopRecorder()}
			_, err := e.Delete(context.Background(), securityGroup(withExternalName(sid)))
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nDelete(...): -want error, +got error:\n%s", tc.reason, diff)
			}
		})
	}
}

// The external name is the tenant's to write: a group of another managed resource is never
// taken over (changed, shown or deleted) by naming it.
func TestAGroupOfAnotherResourceIsNotTakenOver(t *testing.T) {
	victim := &openstack.SecurityGroup{ID: "sg-victim", Name: "db", Tags: []string{identityTagPrefix + "uid-of-the-victim"}}
	e := &external{groups: &fakeNeutron{get: func(string) (*openstack.SecurityGroup, error) { return victim, nil }}, record: event.NewNopRecorder()}
	cr := &v1alpha1.SecurityGroup{}
	cr.SetUID("uid-of-the-thief")
	meta.SetExternalName(cr, "sg-victim")

	o, err := e.Observe(context.Background(), cr)
	if err == nil || !strings.Contains(err.Error(), "belongs to another managed resource") {
		t.Errorf("Observe: %v, want a refusal", err)
	}
	if cr.Status.AtProvider.ID != "" || o.ResourceExists {
		t.Errorf("the victim's group shows in status (%+v) or counts as this resource's (exists %v)", cr.Status.AtProvider, o.ResourceExists)
	}
	// Deleted, the thief lets go without deleting the group.
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
	if o, err := e.Observe(context.Background(), cr); err != nil || o.ResourceExists {
		t.Errorf("Observe while deleting: exists %v, error %v; want it gone without touching the group", o.ResourceExists, err)
	}
}
