package securitygroup

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
)

func TestKeyOfTreatsEquivalentRulesAlike(t *testing.T) {
	cases := map[string]struct {
		a, b openstack.Rule
		same bool
	}{
		"ProtocolNameAndNumber": {
			a:    openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp"), PortRangeMin: ptr.To[int32](22), PortRangeMax: ptr.To[int32](22)},
			b:    openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("6"), PortRangeMin: ptr.To[int32](22), PortRangeMax: ptr.To[int32](22)},
			same: true,
		},
		"ICMPForIPv6IsICMPv6": {
			a:    openstack.Rule{Direction: "ingress", EtherType: "IPv6", Protocol: ptr.To("icmp")},
			b:    openstack.Rule{Direction: "ingress", EtherType: "IPv6", Protocol: ptr.To("ipv6-icmp")},
			same: true,
		},
		"FullPortRangeIsNoRange": {
			a:    openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("udp"), PortRangeMin: ptr.To[int32](1), PortRangeMax: ptr.To[int32](65535)},
			b:    openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("udp")},
			same: true,
		},
		"EverywhereIsNoPrefix": {
			a:    openstack.Rule{Direction: "egress", EtherType: "IPv4", RemoteIPPrefix: ptr.To("0.0.0.0/0")},
			b:    openstack.Rule{Direction: "egress", EtherType: "IPv4"},
			same: true,
		},
		"HostBitsAreMasked": {
			a:    openstack.Rule{Direction: "ingress", EtherType: "IPv4", RemoteIPPrefix: ptr.To("10.1.2.3/8")},
			b:    openstack.Rule{Direction: "ingress", EtherType: "IPv4", RemoteIPPrefix: ptr.To("10.0.0.0/8")},
			same: true,
		},
		"SingleAddressIsHostPrefix": {
			a:    openstack.Rule{Direction: "ingress", EtherType: "IPv6", RemoteIPPrefix: ptr.To("2001:db8::1")},
			b:    openstack.Rule{Direction: "ingress", EtherType: "IPv6", RemoteIPPrefix: ptr.To("2001:db8::1/128")},
			same: true,
		},
		"DescriptionIsNotIdentity": {
			a:    openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp"), Description: ptr.To("ssh")},
			b:    openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp")},
			same: true,
		},
		// The seed controller compared prefix and ports only, and took these for one rule.
		"DirectionMatters": {
			a: openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp"), PortRangeMin: ptr.To[int32](80), PortRangeMax: ptr.To[int32](80)},
			b: openstack.Rule{Direction: "egress", EtherType: "IPv4", Protocol: ptr.To("tcp"), PortRangeMin: ptr.To[int32](80), PortRangeMax: ptr.To[int32](80)},
		},
		"ProtocolMatters": {
			a: openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp"), PortRangeMin: ptr.To[int32](53), PortRangeMax: ptr.To[int32](53)},
			b: openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("udp"), PortRangeMin: ptr.To[int32](53), PortRangeMax: ptr.To[int32](53)},
		},
		"EtherTypeMatters": {
			a: openstack.Rule{Direction: "egress", EtherType: "IPv4"},
			b: openstack.Rule{Direction: "egress", EtherType: "IPv6"},
		},
		"RemoteGroupMatters": {
			a: openstack.Rule{Direction: "ingress", EtherType: "IPv4", RemoteGroupID: ptr.To("a")},
			b: openstack.Rule{Direction: "ingress", EtherType: "IPv4", RemoteGroupID: ptr.To("b")},
		},
		"ICMPTypeMatters": {
			a: openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("icmp"), PortRangeMin: ptr.To[int32](8)},
			b: openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("icmp"), PortRangeMin: ptr.To[int32](0)},
		},
		"AnyProtocolIsNotTCP": {
			a: openstack.Rule{Direction: "ingress", EtherType: "IPv4"},
			b: openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := keyOf(tc.a) == keyOf(tc.b); got != tc.same {
				t.Errorf("keyOf(a) == keyOf(b): got %v, want %v\na: %s\nb: %s", got, tc.same, keyOf(tc.a), keyOf(tc.b))
			}
		})
	}
}

func TestDiffRules(t *testing.T) {
	ssh := openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp"), PortRangeMin: ptr.To[int32](22), PortRangeMax: ptr.To[int32](22), RemoteIPPrefix: ptr.To("10.0.0.0/8")}
	sshObserved := ssh
	sshObserved.ID = "r-ssh"
	sshObserved.Protocol = ptr.To("6")
	egress4 := openstack.Rule{ID: "r-e4", Direction: "egress", EtherType: "IPv4"}
	egress6 := openstack.Rule{ID: "r-e6", Direction: "egress", EtherType: "IPv6"}
	byHand := openstack.Rule{ID: "r-hand", Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp"), PortRangeMin: ptr.To[int32](22), PortRangeMax: ptr.To[int32](22), RemoteIPPrefix: ptr.To("0.0.0.0/0")}

	cases := map[string]struct {
		desired  []openstack.Rule
		observed []openstack.Rule
		want     ruleDiff
	}{
		"InSync": {
			desired:  append(defaultRules(), ssh),
			observed: []openstack.Rule{egress4, sshObserved, egress6},
			want:     ruleDiff{},
		},
		"MissingRuleIsCreated": {
			desired:  append(defaultRules(), ssh),
			observed: []openstack.Rule{egress4, egress6},
			want:     ruleDiff{create: []openstack.Rule{ssh}},
		},
		"RuleAddedByHandIsRemoved": {
			desired:  append(defaultRules(), ssh),
			observed: []openstack.Rule{egress4, egress6, sshObserved, byHand},
			want:     ruleDiff{remove: []openstack.Rule{byHand}},
		},
		"DefaultRulesDropped": {
			desired:  []openstack.Rule{ssh},
			observed: []openstack.Rule{egress4, egress6, sshObserved},
			want:     ruleDiff{remove: []openstack.Rule{egress4, egress6}},
		},
		"DuplicateDesiredRulesCreateOnce": {
			desired:  []openstack.Rule{ssh, ssh},
			observed: nil,
			want:     ruleDiff{create: []openstack.Rule{ssh}},
		},
		"EquivalentObservedDuplicatesKeepOne": {
			desired:  []openstack.Rule{{Direction: "egress", EtherType: "IPv4"}},
			observed: []openstack.Rule{egress4, {ID: "r-e4-any", Direction: "egress", EtherType: "IPv4", RemoteIPPrefix: ptr.To("0.0.0.0/0")}},
			want:     ruleDiff{remove: []openstack.Rule{{ID: "r-e4-any", Direction: "egress", EtherType: "IPv4", RemoteIPPrefix: ptr.To("0.0.0.0/0")}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := diffRules(tc.desired, tc.observed)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(ruleDiff{})); diff != "" {
				t.Errorf("diffRules(...): -want, +got:\n%s", diff)
			}
		})
	}
}

func TestDesiredRules(t *testing.T) {
	sg := func(deleteDefaults bool, rules ...v1alpha1.SecurityGroupRule) *v1alpha1.SecurityGroup {
		cr := &v1alpha1.SecurityGroup{Spec: v1alpha1.SecurityGroupSpec{ForProvider: v1alpha1.SecurityGroupParameters{DeleteDefaultRules: deleteDefaults, Rules: rules}}}
		cr.SetName("db")
		return cr
	}
	tcp5432 := func(ref *xpv2.Reference, sel *xpv2.Selector, id *string) v1alpha1.SecurityGroupRule {
		return v1alpha1.SecurityGroupRule{Direction: "ingress", Protocol: ptr.To("tcp"), PortRangeMin: ptr.To[int32](5432), PortRangeMax: ptr.To[int32](5432), RemoteGroupRef: ref, RemoteGroupSelector: sel, RemoteGroupID: id}
	}
	want5432 := func(remote string) openstack.Rule {
		return openstack.Rule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp"), PortRangeMin: ptr.To[int32](5432), PortRangeMax: ptr.To[int32](5432), RemoteGroupID: ptr.To(remote)}
	}
	cases := map[string]struct {
		sg             *v1alpha1.SecurityGroup
		selfID         string
		want           []openstack.Rule
		wantUnresolved []int
	}{
		"Plain": {
			sg:   sg(true, v1alpha1.SecurityGroupRule{Direction: "ingress", Protocol: ptr.To("icmp")}),
			want: []openstack.Rule{{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("icmp")}},
		},
		"DefaultRulesKept": {
			sg:   sg(false),
			want: defaultRules(),
		},
		"ResolvedReference": {
			sg:   sg(true, tcp5432(&xpv2.Reference{Name: "app"}, nil, ptr.To("app-uuid"))),
			want: []openstack.Rule{want5432("app-uuid")},
		},
		// Optional resolution of a missing group leaves the ID unset: the rule must not
		// become "from anywhere".
		"UnresolvedReferenceIsLeftOut": {
			sg:             sg(true, v1alpha1.SecurityGroupRule{Direction: "ingress"}, tcp5432(&xpv2.Reference{Name: "app"}, nil, nil)),
			want:           []openstack.Rule{{Direction: "ingress", EtherType: "IPv4"}},
			wantUnresolved: []int{1},
		},
		"UnresolvedSelectorIsLeftOut": {
			sg:             sg(true, tcp5432(nil, &xpv2.Selector{MatchLabels: map[string]string{"a": "b"}}, nil)),
			want:           []openstack.Rule{},
			wantUnresolved: []int{0},
		},
		"EmptyIDIsLeftOut": {
			sg:             sg(true, tcp5432(nil, nil, ptr.To(""))),
			want:           []openstack.Rule{},
			wantUnresolved: []int{0},
		},
		"SelfReference": {
			sg:     sg(true, tcp5432(&xpv2.Reference{Name: "db"}, nil, nil)),
			selfID: "db-uuid",
			want:   []openstack.Rule{want5432("db-uuid")},
		},
		"SelfReferenceBeforeTheGroupExists": {
			sg:             sg(true, tcp5432(&xpv2.Reference{Name: "db"}, nil, nil)),
			want:           []openstack.Rule{},
			wantUnresolved: []int{0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, unresolved := desiredRules(tc.sg, tc.selfID)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("desiredRules(...): -want, +got:\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUnresolved, unresolved); diff != "" {
				t.Errorf("desiredRules(...) unresolved: -want, +got:\n%s", diff)
			}
		})
	}
}
