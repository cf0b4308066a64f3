package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	netv1alpha1 "github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
)

const rulesEach = 5

// securityGroups: N SecurityGroups of 5 ingress rules. The floor makes each with one create
// and one bulk rule create (the groups keep Neutron's two default egress rules, as the
// provider's do).
type securityGroups struct {
	neutron *floorNeutron
}

func (securityGroups) name() string    { return "securitygroups" }
func (securityGroups) unit() string    { return fmt.Sprintf("SecurityGroups (%d rules)", rulesEach) }
func (securityGroups) backend() string { return "openstack" }
func (securityGroups) resource() schema.GroupResource {
	return schema.GroupResource{Group: netv1alpha1.Group, Resource: "securitygroups"}
}
func (securityGroups) prepare(context.Context, int) error { return nil }
func (securityGroups) cleanup(context.Context) error      { return nil }
func (securityGroups) newList() resource.ManagedList      { return &netv1alpha1.SecurityGroupList{} }

func (securityGroups) object(i int) client.Object {
	rs := make([]netv1alpha1.SecurityGroupRule, 0, rulesEach)
	for p := range int32(rulesEach) {
		rs = append(rs, netv1alpha1.SecurityGroupRule{
			Direction: netv1alpha1.DirectionIngress, EtherType: netv1alpha1.EtherTypeIPv4, Protocol: ptr.To("tcp"),
			PortRangeMin: ptr.To(8000 + p), PortRangeMax: ptr.To(8000 + p), RemoteIPPrefix: ptr.To("10.0.0.0/8"),
		})
	}
	return &netv1alpha1.SecurityGroup{
		ObjectMeta: objectMeta("scale-%05d", i),
		Spec: netv1alpha1.SecurityGroupSpec{
			ManagedResourceSpec: providerConfigRef(),
			ForProvider:         netv1alpha1.SecurityGroupParameters{Rules: rs},
		},
	}
}

func (s securityGroups) floor(ctx context.Context, n, concurrency int) (time.Duration, int64, error) {
	nc := s.neutron.c
	ids := make([]string, n)
	before := s.neutron.calls.Load()
	start := time.Now()
	err := parallel(n, concurrency, func(i int) error {
		var sg *groups.SecGroup
		if err := retried(func() (err error) {
			sg, err = groups.Create(ctx, nc, groups.CreateOpts{Name: fmt.Sprintf("floor-%05d", i)}).Extract()
			return err
		}); err != nil {
			return err
		}
		ids[i] = sg.ID
		opts := make([]rules.CreateOpts, 0, rulesEach)
		for p := range rulesEach {
			opts = append(opts, rules.CreateOpts{
				Direction: rules.DirIngress, EtherType: rules.EtherType4, Protocol: rules.ProtocolTCP, SecGroupID: sg.ID,
				PortRangeMin: 8000 + p, PortRangeMax: 8000 + p, RemoteIPPrefix: "10.0.0.0/8",
			})
		}
		return retried(func() error {
			_, err := rules.CreateBulk(ctx, nc, opts).Extract()
			return err
		})
	})
	d, made := time.Since(start), s.neutron.calls.Load()-before
	derr := parallel(n, concurrency, func(i int) error {
		if ids[i] == "" {
			return nil
		}
		return retried(func() error { return groups.Delete(ctx, nc, ids[i]).ExtractErr() })
	})
	if err != nil {
		return d, made, err
	}
	return d, made, derr
}

// drift deletes the first ingress rule (port 8000) of k groups by hand and waits until each
// has it again.
func (s securityGroups) drift(ctx context.Context, kube client.Client, k int, timeout time.Duration) (time.Duration, error) {
	nc := s.neutron.c
	l := &netv1alpha1.SecurityGroupList{}
	if err := kube.List(ctx, l, client.InNamespace(namespace), client.Limit(int64(k))); err != nil {
		return 0, err
	}
	has8000 := func(sg *groups.SecGroup) (string, bool) {
		for _, r := range sg.Rules {
			if r.Direction == "ingress" && r.PortRangeMin == 8000 {
				return r.ID, true
			}
		}
		return "", false
	}
	ids := make([]string, 0, k)
	changed := make([]time.Time, 0, k)
	for _, cr := range l.Items {
		id := meta.GetExternalName(&cr)
		sg, err := groups.Get(ctx, nc, id).Extract()
		if err != nil {
			return 0, err
		}
		rule, ok := has8000(sg)
		if !ok {
			return 0, fmt.Errorf("group %s has no rule for port 8000", id)
		}
		if err := rules.Delete(ctx, nc, rule).ExtractErr(); err != nil {
			return 0, err
		}
		ids, changed = append(ids, id), append(changed, time.Now())
	}
	return waitRepaired(ctx, changed, timeout, func(ctx context.Context, i int) (bool, error) {
		sg, err := groups.Get(ctx, nc, ids[i]).Extract()
		if err != nil {
			return false, err
		}
		_, ok := has8000(sg)
		return ok, nil
	})
}
