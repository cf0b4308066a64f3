// Package tenancy decides what a namespace may reach beyond itself. Everything a namespace
// writes is untrusted: selecting the Nodes of the cluster the provider runs in, or minting keys
// for another Keystone user, takes the platform's consent, given on a ClusterProviderConfig
// (spec.tenancy) for the namespaces it lists. A namespaced ProviderConfig cannot give it: its
// author is the tenant.
package tenancy

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/stackservices/provider-stackservices/apis/v1alpha1"
)

// A Permission is something a namespace may do only with the platform's consent.
type Permission int

const (
	// HostNodes: a SecurityGroupAttachment selects the Nodes of the provider's own cluster.
	HostNodes Permission = iota
	// ContractOwners: a Contract sets userID or projectID.
	ContractOwners
	// Servers: a SecurityGroupAttachment names servers by ID, or through the Nodes of a
	// workload cluster (kubeconfigSecretRef), whose provider IDs the tenant writes.
	Servers
)

const errGetClusterConfig = "cannot get the ClusterProviderConfig to check what the namespace may do"

// what names the permission in messages, with the field that grants it.
func (p Permission) what() (string, string) {
	switch p {
	case HostNodes:
		return "select the Nodes of the cluster the provider runs in (spec.forProvider.nodeSelector without kubeconfigSecretRef)", "hostNodeNamespaces"
	case Servers:
		return "name servers by ID (spec.forProvider.serverIDs) or through a workload cluster's Nodes (spec.forProvider.kubeconfigSecretRef)", "serverNamespaces"
	default:
		return "set spec.forProvider.userID or projectID", "contractOwnerNamespaces"
	}
}

// A Checker reads the ClusterProviderConfig a managed resource references.
type Checker struct {
	kube client.Reader
}

// NewChecker returns a Checker that reads configs with kube.
func NewChecker(kube client.Reader) *Checker { return &Checker{kube: kube} }

// Check returns nil when mg's namespace may do p through the config mg references, else an
// error that says what is refused and who can allow it.
func (c *Checker) Check(ctx context.Context, mg resource.ModernManaged, p Permission) error {
	var (
		kind, name string
		t          *v1alpha1.Tenancy
	)
	if ref := mg.GetProviderConfigReference(); ref != nil {
		kind, name = ref.Kind, ref.Name
	}
	if kind == v1alpha1.ClusterProviderConfigKind {
		pc := &v1alpha1.ClusterProviderConfig{}
		if err := c.kube.Get(ctx, types.NamespacedName{Name: name}, pc); err != nil {
			return errors.Wrap(err, errGetClusterConfig)
		}
		t = pc.Spec.Tenancy
	}
	return Decide(kind, name, t, mg.GetNamespace(), p)
}

// Decide is Check's decision, given the kind and name of the config the resource references,
// the ClusterProviderConfig's tenancy (nil when it has none) and the resource's namespace.
func Decide(kind, name string, t *v1alpha1.Tenancy, ns string, p Permission) error {
	what, field := p.what()
	if kind != v1alpha1.ClusterProviderConfigKind {
		if p != HostNodes {
			// A namespace's own credentials may do what OpenStack lets them do.
			return nil
		}
		return errors.Errorf("a managed resource using a namespaced ProviderConfig may not %s: use a ClusterProviderConfig whose spec.tenancy.%s lists namespace %q (a platform team's decision)", what, field, ns)
	}
	var allowed []string
	if t != nil {
		switch p {
		case HostNodes:
			allowed = t.HostNodeNamespaces
		case ContractOwners:
			allowed = t.ContractOwnerNamespaces
		case Servers:
			allowed = t.ServerNamespaces
		}
	}
	if v1alpha1.Allows(allowed, ns) {
		return nil
	}
	return errors.Errorf("namespace %q may not %s: the ClusterProviderConfig %q does not list it in spec.tenancy.%s (a platform team's decision)", ns, what, name, field)
}
