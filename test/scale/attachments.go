package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	netv1alpha1 "github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
)

const (
	// serversEach is how many servers (one port each, as Nova leaves them in Neutron) each
	// attachment names.
	serversEach = 50
	// devicesPerList is how many servers one port list of the floor names (the provider's
	// bound, which keeps the URL short).
	devicesPerList = 40
)

// attachments: N SecurityGroupAttachments, each attaching one group to serversEach servers
// named by ID. The servers are what Nova leaves in Neutron: a port whose device_id is the
// server. The floor lists the ports of each attachment's servers and adds the group to each.
type attachments struct {
	neutron *floorNeutron

	network        string
	servers        []string
	ports          []string
	group, floorSG string
}

func (*attachments) name() string { return "attachments" }
func (*attachments) unit() string {
	return fmt.Sprintf("SecurityGroupAttachments (%d servers each)", serversEach)
}
func (*attachments) backend() string { return "openstack" }
func (*attachments) resource() schema.GroupResource {
	return schema.GroupResource{Group: netv1alpha1.Group, Resource: "securitygroupattachments"}
}
func (*attachments) newList() resource.ManagedList { return &netv1alpha1.SecurityGroupAttachmentList{} }

// prepare makes a network, n*serversEach servers' ports without groups, the group the
// provider attaches and the one the floor attaches.
func (a *attachments) prepare(ctx context.Context, n int) error {
	nc := a.neutron.c
	net, err := networks.Create(ctx, nc, networks.CreateOpts{Name: "scale-attachments"}).Extract()
	if err != nil {
		return err
	}
	a.network = net.ID
	for _, g := range []*string{&a.group, &a.floorSG} {
		sg, err := groups.Create(ctx, nc, groups.CreateOpts{Name: "scale-attachments"}).Extract()
		if err != nil {
			return err
		}
		*g = sg.ID
	}
	a.servers, a.ports = make([]string, n*serversEach), make([]string, n*serversEach)
	start := time.Now()
	err = parallel(len(a.servers), 20, func(i int) error {
		a.servers[i] = uuid.NewString()
		return retried(func() error {
			p, err := ports.Create(ctx, nc, ports.CreateOpts{
				NetworkID: a.network, DeviceOwner: "compute:nova", DeviceID: a.servers[i], SecurityGroups: &[]string{},
			}).Extract()
			if err == nil {
				a.ports[i] = p.ID
			}
			return err
		})
	})
	logf("%d servers' ports made in %.1fs", len(a.servers), time.Since(start).Seconds())
	return err
}

func (a *attachments) object(i int) client.Object {
	return &netv1alpha1.SecurityGroupAttachment{
		ObjectMeta: objectMeta("scale-%05d", i),
		Spec: netv1alpha1.SecurityGroupAttachmentSpec{
			ManagedResourceSpec: providerConfigRef(),
			ForProvider: netv1alpha1.SecurityGroupAttachmentParameters{
				SecurityGroupID: ptr.To(a.group),
				ServerIDs:       slices.Clone(a.servers[i*serversEach : (i+1)*serversEach]),
			},
		},
	}
}

func (a *attachments) floor(ctx context.Context, n, concurrency int) (time.Duration, int64, error) {
	before := a.neutron.calls.Load()
	start := time.Now()
	err := parallel(n, concurrency, func(i int) error { return a.setGroup(ctx, i, a.floorSG, true) })
	d, made := time.Since(start), a.neutron.calls.Load()-before
	derr := parallel(n, concurrency, func(i int) error { return a.setGroup(ctx, i, a.floorSG, false) })
	if err != nil {
		return d, made, err
	}
	return d, made, derr
}

// setGroup adds the group to, or removes it from, every port of attachment i's servers: a
// list of their ports per devicesPerList servers, and one update per port that needs it.
func (a *attachments) setGroup(ctx context.Context, i int, group string, attach bool) error {
	nc := a.neutron.c
	servers := a.servers[i*serversEach : (i+1)*serversEach]
	for start := 0; start < len(servers); start += devicesPerList {
		q := url.Values{"device_id": servers[start:min(start+devicesPerList, len(servers))]}
		var body struct {
			Ports []ports.Port `json:"ports"`
		}
		if err := retried(func() error {
			_, err := nc.Get(ctx, nc.ServiceURL("ports")+"?"+q.Encode(), &body, nil)
			return err
		}); err != nil {
			return err
		}
		for _, p := range body.Ports {
			want := slices.DeleteFunc(slices.Clone(p.SecurityGroups), func(g string) bool { return g == group })
			if attach {
				want = append(want, group)
			}
			if len(want) == len(p.SecurityGroups) {
				continue
			}
			if err := retried(func() error {
				_, err := ports.Update(ctx, nc, p.ID, ports.UpdateOpts{SecurityGroups: &want}).Extract()
				return err
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *attachments) cleanup(ctx context.Context) error {
	nc := a.neutron.c
	err := parallel(len(a.ports), 20, func(i int) error {
		if a.ports[i] == "" {
			return nil
		}
		return ignoreNotFound(retried(func() error { return ports.Delete(ctx, nc, a.ports[i]).ExtractErr() }))
	})
	for _, g := range []string{a.group, a.floorSG} {
		if g != "" {
			err = firstError(err, ignoreNotFound(groups.Delete(ctx, nc, g).ExtractErr()))
		}
	}
	if a.network != "" {
		err = firstError(err, ignoreNotFound(networks.Delete(ctx, nc, a.network).ExtractErr()))
	}
	a.servers, a.ports, a.group, a.floorSG, a.network = nil, nil, "", "", ""
	return err
}

func ignoreNotFound(err error) error {
	if gophercloud.ResponseCodeIs(err, 404) {
		return nil
	}
	return err
}

func firstError(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// drift removes the group by hand from the port of the first server of k attachments and
// waits until each port has it again.
func (a *attachments) drift(ctx context.Context, _ client.Client, k int, timeout time.Duration) (time.Duration, error) {
	nc := a.neutron.c
	k = min(k, len(a.servers)/serversEach)
	changed := make([]time.Time, 0, k)
	for i := range k {
		if _, err := ports.Update(ctx, nc, a.ports[i*serversEach], ports.UpdateOpts{SecurityGroups: &[]string{}}).Extract(); err != nil {
			return 0, err
		}
		changed = append(changed, time.Now())
	}
	return waitRepaired(ctx, changed, timeout, func(ctx context.Context, i int) (bool, error) {
		p, err := ports.Get(ctx, nc, a.ports[i*serversEach]).Extract()
		if err != nil {
			return false, err
		}
		return slices.Contains(p.SecurityGroups, a.group), nil
	})
}
