package securitygroupattachment

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
)

const (
	srvA = "0a1b2c3d-0000-4000-8000-00000000000a"
	srvB = "0a1b2c3d-0000-4000-8000-00000000000b"
	sg   = "sg-new"
	old  = "sg-old"
)

func TestServerOfNode(t *testing.T) {
	cases := map[string]struct {
		node    corev1.Node
		want    string
		wantErr bool
	}{
		"ProviderID":           {node: node("n", "openstack:///"+srvA, ""), want: srvA},
		"ProviderIDWithRegion": {node: node("n", "openstack://RegionOne/"+srvA, ""), want: srvA},
		"ProviderIDUpperCase":  {node: node("n", "openstack:///0A1B2C3D-0000-4000-8000-00000000000A", ""), want: srvA},
		"ProviderIDFirst":      {node: node("n", "openstack:///"+srvA, srvB), want: srvA},
		"SystemUUIDFallback":   {node: node("n", "", "0A1B2C3D-0000-4000-8000-00000000000B"), want: srvB},
		"OtherCloud":           {node: node("n", "aws:///eu-west-1a/i-0abc", ""), wantErr: true},
		"NoUUIDInProviderID":   {node: node("n", "openstack:///not-a-uuid", ""), wantErr: true},
		"NothingToGoOn":        {node: node("n", "", ""), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := serverOfNode(tc.node)
			if (err != nil) != tc.wantErr {
				t.Fatalf("serverOfNode(...): error %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("serverOfNode(...): got %q, want %q", got, tc.want)
			}
		})
	}
}

func node(name, providerID, systemUUID string) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status:     corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{SystemUUID: systemUUID}},
	}
}

func TestResolveTargets(t *testing.T) {
	got := resolveTargets([]corev1.Node{node("b", "", srvB), node("x", "", ""), node("a", "openstack:///"+srvA, "")}, []string{"0A1B2C3D-0000-4000-8000-00000000000B", "0a1b2c3d-0000-4000-8000-0000000000cc"})
	want := map[string]string{srvA: "a", srvB: "b", "0a1b2c3d-0000-4000-8000-0000000000cc": ""}
	if diff := cmp.Diff(want, got.servers); diff != "" {
		t.Errorf("servers: -want, +got:\n%s", diff)
	}
	if len(got.unmatched) != 1 || got.unmatched[0].NodeName != "x" {
		t.Errorf("unmatched: got %+v, want node x", got.unmatched)
	}
}

func port(id, server string, sgs ...string) openstack.Port {
	return openstack.Port{ID: id, DeviceID: server, SecurityGroups: sgs, RevisionNumber: 3}
}

func TestMakePlan(t *testing.T) {
	type want struct {
		servers []v1alpha1.AttachedServer
		changes map[string][]string // port -> security groups after the change
	}
	cases := map[string]struct {
		reason   string
		previous string
		want     map[string]string
		recorded []v1alpha1.AttachedServer
		ports    []openstack.Port
		expect   want
	}{
		"AttachKeepsOtherGroups": {
			reason: "Append mode: the cloud provider's own groups on the port stay.",
			want:   map[string]string{srvA: "a"},
			ports:  []openstack.Port{port("p1", srvA, "ccm-sg"), port("p2", srvA, sg)},
			expect: want{
				servers: []v1alpha1.AttachedServer{{ServerID: srvA, NodeName: "a", PortIDs: []string{"p1", "p2"}, State: v1alpha1.ServerPending, Reason: "the group is missing on 1 of 2 ports"}},
				changes: map[string][]string{"p1": {"ccm-sg", sg}},
			},
		},
		"InSync": {
			want:     map[string]string{srvA: "a"},
			recorded: []v1alpha1.AttachedServer{{ServerID: srvA, State: v1alpha1.ServerAttached}},
			ports:    []openstack.Port{port("p1", srvA, "other", sg)},
			expect: want{
				servers: []v1alpha1.AttachedServer{{ServerID: srvA, NodeName: "a", PortIDs: []string{"p1"}, State: v1alpha1.ServerAttached}},
			},
		},
		"NoLongerSelectedIsDetached": {
			reason:   "A recorded server that is not wanted any more loses only our group.",
			want:     map[string]string{},
			recorded: []v1alpha1.AttachedServer{{ServerID: srvB, NodeName: "b", State: v1alpha1.ServerAttached}},
			ports:    []openstack.Port{port("p3", srvB, "other", sg)},
			expect: want{
				servers: []v1alpha1.AttachedServer{{ServerID: srvB, NodeName: "b", PortIDs: []string{"p3"}, State: v1alpha1.ServerPending, Reason: "no longer selected: detaching"}},
				changes: map[string][]string{"p3": {"other"}},
			},
		},
		"DetachedServerIsForgotten": {
			want:     map[string]string{},
			recorded: []v1alpha1.AttachedServer{{ServerID: srvB, State: v1alpha1.ServerPending}},
			ports:    []openstack.Port{port("p3", srvB, "other")},
			expect:   want{},
		},
		"ServerWithoutPorts": {
			want: map[string]string{srvA: "a"},
			expect: want{
				servers: []v1alpha1.AttachedServer{{ServerID: srvA, NodeName: "a", State: v1alpha1.ServerError, Reason: "the server has no Neutron ports in this project (deleted, or another project's)"}},
			},
		},
		"PortSecurityDisabled": {
			want:  map[string]string{srvA: "a"},
			ports: []openstack.Port{{ID: "p1", DeviceID: srvA, PortSecurityEnabled: ptr.To(false)}},
			expect: want{
				servers: []v1alpha1.AttachedServer{{ServerID: srvA, NodeName: "a", PortIDs: []string{"p1"}, State: v1alpha1.ServerError, Reason: "port p1 has port security disabled, so it takes no security groups"}},
			},
		},
		"GroupChangedSwapsOnEveryServer": {
			reason:   "When the spec names another group, the old one is removed where the new one is added.",
			previous: old,
			want:     map[string]string{srvA: "a"},
			recorded: []v1alpha1.AttachedServer{{ServerID: srvA, State: v1alpha1.ServerAttached}, {ServerID: srvB, State: v1alpha1.ServerAttached}},
			ports:    []openstack.Port{port("p1", srvA, "other", old), port("p3", srvB, old)},
			expect: want{
				servers: []v1alpha1.AttachedServer{
					{ServerID: srvA, NodeName: "a", PortIDs: []string{"p1"}, State: v1alpha1.ServerPending, Reason: "the group is missing on 1 of 1 ports"},
					{ServerID: srvB, PortIDs: []string{"p3"}, State: v1alpha1.ServerPending, Reason: "no longer selected: detaching"},
				},
				changes: map[string][]string{"p1": {"other", sg}, "p3": {}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := makePlan(sg, tc.previous, tc.want, tc.recorded, tc.ports)
			if diff := cmp.Diff(tc.expect.servers, p.servers, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nservers: -want, +got:\n%s", tc.reason, diff)
			}
			got := map[string][]string{}
			for _, c := range p.changes {
				got[c.port.ID] = c.apply(c.port.SecurityGroups)
			}
			if diff := cmp.Diff(tc.expect.changes, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nchanges: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
