package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/google/go-cmp/cmp"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	netv1alpha1 "github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	osclient "github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/machines"
	osmachines "github.com/stackservices/provider-stackservices/internal/machines/openstack"
)

const (
	errOpenStackDisabled = "spec.forProvider.machines.type is OpenStack, but this provider runs without --etcd-provider-cidr: " +
		"members' security groups would not let the provider reach them; ask the platform team to set it"
	errConnectOpenStack = "cannot connect to OpenStack"
	errFmtGroupTaken    = "a SecurityGroup named %s exists and does not belong to this cluster: the cluster's members need that name for their group"
	errGetGroup         = "cannot get the members' SecurityGroup"
	errApplyGroup       = "cannot create or update the members' SecurityGroup"
	errDeleteGroup      = "cannot delete the members' SecurityGroup"
	errNoOpenStackSpec  = "spec.forProvider.machines.openstack is missing"

	etcdPeerPort   = 2380
	etcdClientPort = 2379
)

// openstackMachines are the OpenStack machines of a cluster, reached with the session of its
// ProviderConfig (which records the cluster's use of it).
func (c *connector) openstackMachines(ctx context.Context, cr *v1alpha1.EtcdCluster) (machines.Machines, error) {
	if len(c.providerCIDRs) == 0 {
		return nil, errors.New(errOpenStackDisabled)
	}
	s, err := c.openstack.Connect(ctx, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConnectOpenStack)
	}
	compute, err := s.Compute()
	if err != nil {
		return nil, err
	}
	images, err := s.Images()
	if err != nil {
		return nil, err
	}
	spec := cr.Spec.ForProvider.Machines.OpenStack
	if spec == nil {
		return nil, errors.New(errNoOpenStackSpec)
	}
	// The group is put back on every reconcile, not only when a member is allocated: a rule
	// opened by hand is closed within a poll.
	if !meta.WasDeleted(cr) {
		if _, err := ensureMemberGroup(ctx, c.kube, cr, c.providerCIDRs); err != nil && !errors.As(err, new(groupNotReady)) {
			return nil, err
		}
	}
	// Only a cluster that boots from volumes talks to Cinder: one that does not must not
	// depend on it (a Cinder that is down, or refuses the tenant, would block its delete).
	// Nova deletes boot volumes with their servers, so a cluster that stopped asking for
	// them leaves none behind.
	var volumes osclient.Volumes
	if ptr.Deref(spec.BootVolumeGiB, 0) > 0 {
		if volumes, err = s.Volumes(); err != nil {
			return nil, err
		}
	}
	return osmachines.New(osmachines.Options{
		Compute: compute, Networks: s.Networks(), Images: images, Volumes: volumes,
		Spec: osmachines.Spec{
			Flavor: spec.Flavor, Image: spec.Image,
			Network: ptr.Deref(spec.Network, ""), Subnet: ptr.Deref(spec.Subnet, ""),
			AvailabilityZones: spec.AvailabilityZones, ServerGroupPolicy: spec.ServerGroupPolicy,
			KeyPair: ptr.Deref(spec.KeyPair, ""), SecurityGroups: spec.SecurityGroups,
			EtcdPath: etcdPath(spec), ReleaseURL: ptr.Deref(spec.EtcdReleaseURL, ""), Checksums: c.releaseChecksums,
			Version: cr.Spec.ForProvider.Version, BootVolumeGiB: int(ptr.Deref(spec.BootVolumeGiB, 0)),
		},
		SecurityGroup: func(ctx context.Context) (string, error) {
			return ensureMemberGroup(ctx, c.kube, cr, c.providerCIDRs)
		},
	}), nil
}

func etcdPath(spec *v1alpha1.OpenStackMachines) string {
	if spec.EtcdPath == "" {
		return "/opt/etcd/v{version}/etcd"
	}
	return spec.EtcdPath
}

// memberGroupName is the name of the cluster's SecurityGroup.
func memberGroupName(cr *v1alpha1.EtcdCluster) string {
	name := cr.GetName()
	if len(name) > 200 {
		name = name[:200]
	}
	return name + "-members"
}

// memberGroupRules: peers (2380) only from members, clients (2379) from members, the
// provider and the spec's client CIDRs. Egress stays Neutron's default (all).
func memberGroupRules(cr *v1alpha1.EtcdCluster, providerCIDRs []string) []netv1alpha1.SecurityGroupRule {
	self := &xpv2.Reference{Name: memberGroupName(cr)}
	tcp := func(port int32) (*string, *int32, *int32) { return ptr.To("tcp"), ptr.To(port), ptr.To(port) }
	var rules []netv1alpha1.SecurityGroupRule
	for _, port := range []int32{etcdPeerPort, etcdClientPort} {
		p, lo, hi := tcp(port)
		rules = append(rules, netv1alpha1.SecurityGroupRule{
			Direction: netv1alpha1.DirectionIngress, EtherType: netv1alpha1.EtherTypeIPv4, Protocol: p,
			PortRangeMin: lo, PortRangeMax: hi, RemoteGroupRef: self,
			Description: ptr.To(fmt.Sprintf("etcd %d from the cluster's members", port)),
		})
	}
	var cidrs []string
	cidrs = append(cidrs, providerCIDRs...)
	if m := cr.Spec.ForProvider.Machines; m != nil && m.OpenStack != nil {
		cidrs = append(cidrs, m.OpenStack.ClientCIDRs...)
	}
	slices.Sort(cidrs)
	for _, cidr := range slices.Compact(cidrs) {
		p, lo, hi := tcp(etcdClientPort)
		family := netv1alpha1.EtherTypeIPv4
		if strings.Contains(cidr, ":") {
			family = netv1alpha1.EtherTypeIPv6
		}
		rules = append(rules, netv1alpha1.SecurityGroupRule{
			Direction: netv1alpha1.DirectionIngress, EtherType: family, Protocol: p,
			PortRangeMin: lo, PortRangeMax: hi, RemoteIPPrefix: ptr.To(cidr),
			Description: ptr.To("etcd clients"),
		})
	}
	return rules
}

// ensureMemberGroup makes (or puts back) the cluster's SecurityGroup, a managed resource the
// cluster controls: the SecurityGroup controller makes it in Neutron and keeps its rules,
// and it is deleted with the cluster. It returns the group's Neutron ID once it has one.
func ensureMemberGroup(ctx context.Context, kube client.Client, cr *v1alpha1.EtcdCluster, providerCIDRs []string) (string, error) {
	want := netv1alpha1.SecurityGroupParameters{
		Description: ptr.To(fmt.Sprintf("etcd members of EtcdCluster %s/%s (provider-stackservices)", cr.GetNamespace(), cr.GetName())),
		Rules:       memberGroupRules(cr, providerCIDRs),
	}
	sg := &netv1alpha1.SecurityGroup{}
	err := kube.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: memberGroupName(cr)}, sg)
	switch {
	case kerrors.IsNotFound(err):
		sg = &netv1alpha1.SecurityGroup{ObjectMeta: metav1.ObjectMeta{Namespace: cr.GetNamespace(), Name: memberGroupName(cr)}}
		meta.AddOwnerReference(sg, meta.AsController(meta.TypedReferenceTo(cr, v1alpha1.EtcdClusterGroupVersionKind)))
		sg.Spec.ProviderConfigReference = cr.GetProviderConfigReference()
		sg.Spec.ForProvider = want
		if err := kube.Create(ctx, sg); err != nil {
			return "", errors.Wrap(err, errApplyGroup)
		}
		return "", groupNotReady(sg.GetName())
	case err != nil:
		return "", errors.Wrap(err, errGetGroup)
	case !metav1.IsControlledBy(sg, cr):
		return "", errors.Errorf(errFmtGroupTaken, sg.GetName())
	}
	// A tenant may edit the group; the cluster's rules are put back (resolved references
	// aside, which the SecurityGroup controller fills in, as it late-initialises the rest).
	have := slices.Clone(sg.Spec.ForProvider.Rules)
	for i := range have {
		if have[i].RemoteGroupRef != nil {
			have[i].RemoteGroupID = nil
		}
	}
	if !cmp.Equal(want.Rules, have) || !cmp.Equal(want.Description, sg.Spec.ForProvider.Description) ||
		!cmp.Equal(sg.Spec.ProviderConfigReference, cr.GetProviderConfigReference()) {
		sg.Spec.ForProvider.Rules, sg.Spec.ForProvider.Description = want.Rules, want.Description
		sg.Spec.ProviderConfigReference = cr.GetProviderConfigReference()
		if err := kube.Update(ctx, sg); err != nil {
			return "", errors.Wrap(err, errApplyGroup)
		}
	}
	if id := sg.Status.AtProvider.ID; id != "" && meta.GetExternalName(sg) != "" {
		return id, nil
	}
	return "", groupNotReady(sg.GetName())
}

// groupNotReady: the members' SecurityGroup has no Neutron ID yet.
type groupNotReady string

func (g groupNotReady) Error() string {
	return "waiting for the members' SecurityGroup " + string(g) + " to exist in Neutron"
}

// memberGroupLeft tells whether the cluster's SecurityGroup still exists (being deleted or
// not).
func memberGroupLeft(ctx context.Context, kube client.Client, cr *v1alpha1.EtcdCluster) (bool, error) {
	sg := &netv1alpha1.SecurityGroup{}
	err := kube.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: memberGroupName(cr)}, sg)
	if kerrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, errors.Wrap(err, errGetGroup)
	}
	return metav1.IsControlledBy(sg, cr), nil
}

// deleteMemberGroup deletes the cluster's SecurityGroup once its members' ports are gone
// (the SecurityGroup controller then deletes it in Neutron). Its owner reference would have
// the garbage collector do it too, once the cluster is gone.
func deleteMemberGroup(ctx context.Context, kube client.Client, cr *v1alpha1.EtcdCluster) error {
	sg := &netv1alpha1.SecurityGroup{}
	err := kube.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: memberGroupName(cr)}, sg)
	if kerrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return errors.Wrap(err, errGetGroup)
	}
	if !metav1.IsControlledBy(sg, cr) {
		return nil
	}
	return errors.Wrap(client.IgnoreNotFound(kube.Delete(ctx, sg)), errDeleteGroup)
}
