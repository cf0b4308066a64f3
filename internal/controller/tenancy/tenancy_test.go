package tenancy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stackservices/provider-stackservices/apis/v1alpha1"
)

func TestDecide(t *testing.T) {
	open := &v1alpha1.Tenancy{HostNodeNamespaces: []string{"infra"}, ContractOwnerNamespaces: []string{"*"}}
	cases := map[string]struct {
		kind    string
		tenancy *v1alpha1.Tenancy
		ns      string
		p       Permission
		allowed bool
	}{
		"HostNodesWithoutTenancy":          {kind: v1alpha1.ClusterProviderConfigKind, ns: "team-a", p: HostNodes},
		"HostNodesListedNamespace":         {kind: v1alpha1.ClusterProviderConfigKind, tenancy: open, ns: "infra", p: HostNodes, allowed: true},
		"HostNodesOtherNamespace":          {kind: v1alpha1.ClusterProviderConfigKind, tenancy: open, ns: "team-a", p: HostNodes},
		"HostNodesThroughNamespacedConfig": {kind: v1alpha1.ProviderConfigKind, tenancy: open, ns: "infra", p: HostNodes},
		"HostNodesWithoutConfigReference":  {ns: "infra", p: HostNodes},
		"OwnersWildcard":                   {kind: v1alpha1.ClusterProviderConfigKind, tenancy: open, ns: "team-a", p: ContractOwners, allowed: true},
		"OwnersWithoutTenancy":             {kind: v1alpha1.ClusterProviderConfigKind, ns: "team-a", p: ContractOwners},
		// A tenant's own credentials decide what they may do in Keystone.
		"OwnersThroughNamespacedConfig":  {kind: v1alpha1.ProviderConfigKind, ns: "team-a", p: ContractOwners, allowed: true},
		"ServersWithoutTenancy":          {kind: v1alpha1.ClusterProviderConfigKind, ns: "team-a", p: Servers},
		"ServersListed":                  {kind: v1alpha1.ClusterProviderConfigKind, tenancy: &v1alpha1.Tenancy{ServerNamespaces: []string{"team-a"}}, ns: "team-a", p: Servers, allowed: true},
		"ServersThroughNamespacedConfig": {kind: v1alpha1.ProviderConfigKind, ns: "team-a", p: Servers, allowed: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Decide(tc.kind, "default", tc.tenancy, tc.ns, tc.p)
			if diff := cmp.Diff(tc.allowed, err == nil); diff != "" {
				t.Errorf("Decide(...): allowed -want +got:\n%s (error: %v)", diff, err)
			}
		})
	}
}
