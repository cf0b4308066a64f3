//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/quotasets"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servergroups"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	netv1alpha1 "github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	apisv1alpha1 "github.com/stackservices/provider-stackservices/apis/v1alpha1"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// explainClusterOnFailure logs, when the test fails, what the provider and the test bed say
// of the cluster (the provider's log lines of its namespace, its servers in Nova and what the
// hypervisor says of each, its events, its members and conditions), then deletes its servers
// in Nova directly: the control plane stops with the test binary, and servers left behind
// would count against the quota of the tests after it. The events and the status come last:
// a report that keeps only the end of a test's output keeps them.
func explainClusterOnFailure(t *testing.T, cr *v1alpha1.EtcdCluster, cc *gophercloud.ServiceClient) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		var said []string
		for _, line := range env.Logs.Lines(cr.GetNamespace(), 5000) {
			if !strings.Contains(line, "Reconciling") && !strings.Contains(line, "is up to date") {
				said = append(said, line)
			}
		}
		for _, line := range said[max(0, len(said)-40):] {
			t.Logf("provider: %s", line)
		}
		tag := "etcd-cluster:" + string(cr.GetUID())
		if pages, err := servers.List(cc, servers.ListOpts{Tags: tag}).AllPages(ctx); err == nil {
			srvs, _ := servers.ExtractServers(pages)
			// Cleanups run last first: the servers go after their explanations.
			t.Cleanup(func() {
				for _, s := range srvs {
					_ = servers.Delete(ctx, cc, s.ID).ExtractErr()
				}
			})
			for _, s := range srvs {
				// Created to launched is Nova's time; launched to the hypervisor's "booted"
				// the test bed's; booted to Ready the member's and the provider's.
				t.Logf("server %s %s: %s in %q, created %s, launched %s, fault %v", s.Name, s.ID, s.Status, s.AvailabilityZone,
					s.Created.Format(time.TimeOnly), s.LaunchedAt.Format(time.TimeOnly), s.Fault)
				explainServerOnFailure(t, s.ID)
			}
		}
		l := &corev1.EventList{}
		if err := env.Kube.List(ctx, l, client.InNamespace(cr.GetNamespace())); err == nil {
			slices.SortFunc(l.Items, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
			for _, e := range l.Items {
				t.Logf("event %s %s %s/%s: %s (x%d)", e.LastTimestamp.Format(time.TimeOnly), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message, max(e.Count, 1))
			}
		}
		got := &v1alpha1.EtcdCluster{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(cr), got); err != nil {
			t.Logf("the cluster: %v", err)
			return
		}
		for _, m := range got.Status.AtProvider.Members {
			t.Logf("member %s: healthy %t, learner %t, machine %s %s, server %+v", m.Name, m.Healthy, m.Learner, m.MachineID, m.MachineState, m.Server)
		}
		t.Logf("the cluster: phase %s, next step %q, deleted at %v, finalizers %v, annotations %v, Synced: %s", got.Status.AtProvider.Phase,
			got.Status.AtProvider.NextStep, got.GetDeletionTimestamp(), got.GetFinalizers(), got.GetAnnotations(), got.GetCondition(xpv2.TypeSynced).Message)
	})
}

// onServers puts the cluster's members on the test bed's Nova, in the project of the
// namespace's ProviderConfig.
func onServers(cr *v1alpha1.EtcdCluster, o *v1alpha1.OpenStackMachines) *v1alpha1.EtcdCluster {
	cr.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "default"}
	cr.Spec.ForProvider.Machines = &v1alpha1.Machines{Type: v1alpha1.MachinesOpenStack, OpenStack: o}
	return cr
}

// novaTest is what a Nova test starts from: a namespace, a free /24 of the servers' range
// with its subnet, and the demo project's Nova (the namespace's ProviderConfig's project).
type novaTest struct {
	ns, subnetID string
	cidr         netip.Prefix
	cc           *gophercloud.ServiceClient
}

func newNovaTest(t *testing.T) novaTest {
	t.Helper()
	n := novaTest{ns: newNamespace(t)}
	_, n.subnetID, n.cidr = freeServerSubnet(t, n.ns)
	var err error
	if n.cc, err = env.Compute(harness.Ctx(t), harness.CloudDemo); err != nil {
		t.Fatal(err)
	}
	return n
}

// machines are servers of flavor with the test bed's image, on the test's subnet.
func (n novaTest) machines(t *testing.T, flavor string) *v1alpha1.OpenStackMachines {
	return &v1alpha1.OpenStackMachines{Flavor: flavor, Image: mustEnv(t, "TESTBED_IMAGE"), Subnet: ptr.To(n.subnetID)}
}

// create creates the cluster, and explains it (and deletes its servers) if the test fails.
func (n novaTest) create(t *testing.T, cr *v1alpha1.EtcdCluster) {
	t.Helper()
	if err := env.Kube.Create(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	explainClusterOnFailure(t, cr, n.cc)
}

// noPorts fails the test if the cluster has a port in Neutron (nothing was to be made).
func noPorts(t *testing.T, cr *v1alpha1.EtcdCluster) {
	t.Helper()
	if err := env.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(cr), cr); err != nil {
		t.Fatal(err)
	}
	pages, err := ports.List(env.Neutron, ports.ListOpts{Description: "etcd-cluster:" + string(cr.GetUID())}).AllPages(harness.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if ps, _ := ports.ExtractPorts(pages); len(ps) > 0 {
		t.Errorf("%s: %d ports made, want none", cr.GetName(), len(ps))
	}
}

// TestEtcdClusterOnOpenStack runs a cluster's members on the test bed's Nova: a port and a
// server per member, spread over the zones, in the cluster's server group and security group;
// the members really run etcd at their ports' fixed IPs (the test bed's hypervisor boots the
// user-data); the connection Secret reaches them; deleting the cluster leaves nothing in Nova
// or Neutron.
func TestEtcdClusterOnOpenStack(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	n := newNovaTest(t)
	ns, cidr, cc := n.ns, n.cidr, n.cc
	zones := strings.Fields(mustEnv(t, "TESTBED_ZONES"))

	// Created on the old version, so that the rolling upgrade below runs on servers too.
	m := n.machines(t, mustEnv(t, "TESTBED_FLAVOR_SMALL"))
	m.AvailabilityZones, m.ClientCIDRs = zones, []string{"198.51.100.0/24"}
	cr := onServers(newEtcdCluster(ns, "orders", etcdOld, 3), m)
	start := time.Now()
	n.create(t, cr)
	took := waitCluster(t, cr, clusterIs(3, etcdOld))
	t.Logf("3 members on Nova servers Ready in %s", took.Round(100*time.Millisecond))

	kv := etcdClient(t, ns, "orders-etcd", true)
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := kv.Put(c, "placed", "on nova"); err != nil {
		t.Fatalf("write through the connection Secret: %v", err)
	}

	// Every member is a server of the cluster, at its port's address, spread over the zones.
	tag := "etcd-cluster:" + string(cr.GetUID())
	pages, err := servers.List(cc, servers.ListOpts{Tags: tag}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srvs, err := servers.ExtractServers(pages)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]int{}
	for _, s := range srvs {
		used[s.AvailabilityZone]++
		if s.Status != "ACTIVE" {
			t.Errorf("server %s is %s", s.Name, s.Status)
		}
	}
	if len(srvs) != 3 || len(used) != len(zones) {
		t.Errorf("%d servers in zones %v, want 3 over %v", len(srvs), used, zones)
	}
	for _, m := range cr.Status.AtProvider.Members {
		if m.Server == nil || m.Server.ID == "" || m.Server.Zone == "" || m.Server.Status != "ACTIVE" {
			t.Errorf("member %s: status shows server %+v", m.Name, m.Server)
		}
		if u, err := url.Parse(m.ClientURL); err != nil || !cidr.Contains(netip.MustParseAddr(u.Hostname())) {
			t.Errorf("member %s at %s, want an address of its subnet", m.Name, m.ClientURL)
		}
	}
	sgKey := client.ObjectKey{Namespace: ns, Name: "orders-members"}
	sg := &netv1alpha1.SecurityGroup{}
	if err := env.Kube.Get(ctx, sgKey, sg); err != nil {
		t.Fatalf("the members' SecurityGroup: %v", err)
	}
	portPages, err := ports.List(env.Neutron, ports.ListOpts{Description: tag}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := ports.ExtractPorts(portPages)
	for _, p := range ps {
		if !slices.Contains(p.SecurityGroups, sg.Status.AtProvider.ID) {
			t.Errorf("port %s has groups %v, want the members' %s", p.Name, p.SecurityGroups, sg.Status.AtProvider.ID)
		}
	}
	if len(ps) != 3 {
		t.Errorf("%d ports of the cluster, want 3", len(ps))
	}
	group, err := groups.Get(ctx, env.Neutron, sg.Status.AtProvider.ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	var client2379 []string
	for _, r := range group.Rules {
		if r.Direction == "ingress" && r.PortRangeMin == 2379 && r.RemoteIPPrefix != "" {
			client2379 = append(client2379, r.RemoteIPPrefix)
		}
		if r.Direction == "ingress" && r.PortRangeMin == 2380 && r.RemoteGroupID != group.ID {
			t.Errorf("peer port open to %q %q, want only the members' group", r.RemoteIPPrefix, r.RemoteGroupID)
		}
	}
	slices.Sort(client2379)
	if want := []string{"198.18.0.0/15", "198.51.100.0/24"}; !slices.Equal(client2379, want) {
		t.Errorf("client port open to %v, want %v (the provider and the spec's clientCIDRs)", client2379, want)
	}

	// Soft anti-affinity: the server group put the three servers on three hosts (Nova shows
	// hosts to admins only).
	admin, err := env.Compute(ctx, harness.CloudAdmin)
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]bool{}
	for _, s := range srvs {
		got, err := servers.Get(ctx, admin, s.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		hosts[got.Host] = true
	}
	if len(hosts) != len(srvs) {
		t.Errorf("servers on hosts %v: the server group did not spread them", hosts)
	}

	// A rolling upgrade on servers: each member replaced by a new server running the new
	// version, with no acknowledged write lost.
	upgradeUnderWrites(t, cr, kv, etcdNew)

	// Failover: a server deleted by hand, then one stopped (openstack server stop), are
	// each replaced by a new member on a new server; the data stays.
	for _, how := range []string{"deleted", "stopped"} {
		victim := cr.Status.AtProvider.Members[0]
		if victim.Server == nil {
			t.Fatalf("member %s shows no server", victim.Name)
		}
		lost := time.Now()
		switch how {
		case "deleted":
			err = servers.Delete(ctx, cc, victim.Server.ID).ExtractErr()
		case "stopped":
			err = servers.Stop(ctx, cc, victim.Server.ID).ExtractErr()
		}
		if err != nil {
			t.Fatal(err)
		}
		waitCluster(t, cr, func(cr *v1alpha1.EtcdCluster) error {
			for _, m := range cr.Status.AtProvider.Members {
				if m.Name == victim.Name {
					return fmt.Errorf("member %s, whose server was %s, is still a member (phase %s, next step %q)", victim.Name, how, cr.Status.AtProvider.Phase, cr.Status.AtProvider.NextStep)
				}
			}
			return clusterIs(3, etcdNew)(cr)
		})
		t.Logf("member %s, whose server was %s by hand, replaced in %s", victim.Name, how, time.Since(lost).Round(100*time.Millisecond))
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := kv.Get(c, "placed")
		cancel()
		if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "on nova" {
			t.Errorf("after the server was %s: placed = %v, %v; want on nova", how, r, err)
		}
		// The stopped server is the replaced member's: it goes with it.
		harness.Eventually(t, 2*time.Minute, "the replaced member's server gone from Nova", func() error {
			if _, err := servers.Get(ctx, cc, victim.Server.ID).Extract(); err == nil {
				return fmt.Errorf("server %s of %s is still there", victim.Server.ID, victim.Name)
			}
			return nil
		})
	}

	// Scaling out and in: new members on new servers, then the extra ones removed with
	// their servers and ports.
	for _, n := range []int32{5, 3} {
		env.Mutate(t, client.ObjectKeyFromObject(cr), cr, func() { cr.Spec.ForProvider.Members = n })
		took := waitCluster(t, cr, clusterIs(int(n), etcdNew))
		t.Logf("scaled to %d members on servers in %s", n, took.Round(100*time.Millisecond))
		harness.Eventually(t, 2*time.Minute, fmt.Sprintf("%d servers and ports of the cluster", n), func() error {
			pages, err := servers.List(cc, servers.ListOpts{Tags: tag}).AllPages(ctx)
			if err != nil {
				return err
			}
			portPages, err := ports.List(env.Neutron, ports.ListOpts{Description: tag}).AllPages(ctx)
			if err != nil {
				return err
			}
			s, _ := servers.ExtractServers(pages)
			p, _ := ports.ExtractPorts(portPages)
			if len(s) != int(n) || len(p) != int(n) {
				return fmt.Errorf("%d servers and %d ports", len(s), len(p))
			}
			return nil
		})
	}
	if got := etcdGet(t, kv, "placed"); got != "on nova" {
		t.Errorf("after scaling: placed = %q, want on nova", got)
	}

	// Deleting the cluster leaves nothing: servers, ports, server group, security group.
	if err := env.Kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitNothingLeft(t, cc, cr, group.ID)
	t.Logf("created and deleted in %s", time.Since(start).Round(time.Second))
}

// waitNothingLeft waits until Nova and Neutron hold nothing of the deleted cluster: no
// server, no port, no server group, and not its security group.
func waitNothingLeft(t *testing.T, cc *gophercloud.ServiceClient, cr *v1alpha1.EtcdCluster, securityGroupID string) {
	t.Helper()
	ctx := harness.Ctx(t)
	tag := "etcd-cluster:" + string(cr.GetUID())
	harness.Eventually(t, 3*time.Minute, "nothing of the cluster left in Nova and Neutron", func() error {
		pages, err := servers.List(cc, servers.ListOpts{Tags: tag}).AllPages(ctx)
		if err != nil {
			return err
		}
		if s, _ := servers.ExtractServers(pages); len(s) > 0 {
			return fmt.Errorf("%d servers left", len(s))
		}
		portPages, err := ports.List(env.Neutron, ports.ListOpts{Description: tag}).AllPages(ctx)
		if err != nil {
			return err
		}
		if p, _ := ports.ExtractPorts(portPages); len(p) > 0 {
			return fmt.Errorf("%d ports left", len(p))
		}
		gPages, err := servergroups.List(cc, nil).AllPages(ctx)
		if err != nil {
			return err
		}
		all, _ := servergroups.ExtractServerGroups(gPages)
		for _, g := range all {
			if g.Name == "etcd-"+string(cr.GetUID()) {
				return fmt.Errorf("server group %s left", g.ID)
			}
		}
		if _, err := groups.Get(ctx, env.Neutron, securityGroupID).Extract(); err == nil {
			return fmt.Errorf("security group %s left", securityGroupID)
		}
		if vs := bootVolumes(t, cr); len(vs) > 0 {
			return fmt.Errorf("%d boot volumes left", len(vs))
		}
		return nil
	})
}

// bootVolumes are the cluster's volumes in Cinder (its members' boot volumes).
func bootVolumes(t *testing.T, cr *v1alpha1.EtcdCluster) []volumes.Volume {
	t.Helper()
	ctx := harness.Ctx(t)
	bs, err := env.BlockStorage(ctx, harness.CloudDemo)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := volumes.List(bs, volumes.ListOpts{Metadata: map[string]string{"etcd-cluster": string(cr.GetUID())}}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := volumes.ExtractVolumes(pages)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// memberGroupID is the Neutron ID of the cluster's members' security group.
func memberGroupID(t *testing.T, cr *v1alpha1.EtcdCluster) string {
	t.Helper()
	sg := &netv1alpha1.SecurityGroup{}
	if err := env.Kube.Get(harness.Ctx(t), client.ObjectKey{Namespace: cr.GetNamespace(), Name: cr.GetName() + "-members"}, sg); err != nil {
		t.Fatalf("the members' SecurityGroup: %v", err)
	}
	if sg.Status.AtProvider.ID == "" {
		t.Fatalf("the members' SecurityGroup %s has no ID", sg.GetName())
	}
	return sg.Status.AtProvider.ID
}

// TestEtcdClusterOnOpenStackMissingFlavor: a flavor that does not exist is a condition that
// names it, and nothing is made in Neutron or Nova.
func TestEtcdClusterOnOpenStackMissingFlavor(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	n := newNovaTest(t)
	cr := onServers(newEtcdCluster(n.ns, "nowhere", etcdNew, 3), n.machines(t, "m1.nonexistent"))
	n.create(t, cr)
	waitForConditionMessage(t, toUnstructured(t, cr), `there is no flavor "m1.nonexistent"`)
	noPorts(t, cr)
	if err := env.Kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
}

// projectWithQuota makes a project of the test's own, whose Nova quota allows instances
// servers: a user with the member role in it, a network and subnet of its own, and a
// ProviderConfig of the namespace (named "quota") that logs in as that user. All go when the
// test ends. The demo project's quota stays unlimited for the tests that run alongside.
func projectWithQuota(t *testing.T, ns string, instances int) (subnetID string, admin *gophercloud.ServiceClient, adminNet *gophercloud.ServiceClient) {
	t.Helper()
	ctx := harness.Ctx(t)
	id, err := env.AdminIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if admin, err = env.Compute(ctx, harness.CloudAdmin); err != nil {
		t.Fatal(err)
	}
	if adminNet, err = env.Network(ctx, harness.CloudAdmin); err != nil {
		t.Fatal(err)
	}
	p, err := projects.Create(ctx, id, projects.CreateOpts{Name: ns, DomainID: "default", Description: "quota test " + t.Name()}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = projects.Delete(context.Background(), id, p.ID).ExtractErr() })
	password := rand.Text()
	u, err := users.Create(ctx, id, users.CreateOpts{Name: ns, DomainID: "default", Password: password, DefaultProjectID: p.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = users.Delete(context.Background(), id, u.ID).ExtractErr() })
	rolePages, err := roles.List(id, roles.ListOpts{Name: "member"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := roles.ExtractRoles(rolePages)
	if err != nil || len(rs) != 1 {
		t.Fatalf("the member role: %v, %v", rs, err)
	}
	if err := roles.Assign(ctx, id, rs[0].ID, roles.AssignOpts{UserID: u.ID, ProjectID: p.ID}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := quotasets.Update(ctx, admin, p.ID, quotasets.UpdateOpts{Instances: &instances}).Extract(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = quotasets.Delete(context.Background(), admin, p.ID).Err })
	n, err := networks.Create(ctx, adminNet, networks.CreateOpts{Name: ns, ProjectID: p.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = networks.Delete(context.Background(), adminNet, n.ID).ExtractErr() })
	// No server ever boots on it: any range of the servers' will do.
	sn, err := subnets.Create(ctx, adminNet, subnets.CreateOpts{NetworkID: n.ID, ProjectID: p.ID, CIDR: "198.19.199.0/24", IPVersion: gophercloud.IPv4, Name: ns}).Extract()
	if err != nil {
		t.Fatal(err)
	}

	// The demo cloud's entry of the test bed's clouds.yaml, logged in as the new user.
	var clouds struct {
		Clouds map[string]map[string]any `json:"clouds"`
	}
	if err := yaml.Unmarshal(env.CloudsYAML, &clouds); err != nil {
		t.Fatal(err)
	}
	entry := clouds.Clouds[harness.CloudDemo]
	auth, _ := entry["auth"].(map[string]any)
	auth["username"], auth["password"], auth["project_name"] = ns, password, ns
	out, err := yaml.Marshal(map[string]any{"clouds": map[string]any{"quota": entry}})
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota-credentials"}, Data: map[string][]byte{"clouds.yaml": out}},
		&apisv1alpha1.ProviderConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota"},
			Spec: apisv1alpha1.ProviderConfigSpec{
				CloudSettings: apisv1alpha1.CloudSettings{Cloud: "quota"},
				Credentials: apisv1alpha1.NamespacedCredentials{
					Source:    "Secret",
					SecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "quota-credentials"}, Key: "clouds.yaml"},
				},
			},
		},
	}
	for _, o := range objs {
		if err := env.Kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return sn.ID, admin, adminNet
}

// TestEtcdClusterOnOpenStackOverQuota: a cluster the project's quota cannot hold is a
// condition that says which quota, how much is used and what to do, and nothing is made in
// Nova or Neutron; deleting the cluster then leaves nothing either.
func TestEtcdClusterOnOpenStackOverQuota(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	subnetID, admin, adminNet := projectWithQuota(t, ns, 2)
	cr := onServers(newEtcdCluster(ns, "tight", etcdNew, 3), &v1alpha1.OpenStackMachines{
		Flavor: mustEnv(t, "TESTBED_FLAVOR_SMALL"), Image: mustEnv(t, "TESTBED_IMAGE"), Subnet: ptr.To(subnetID),
	})
	cr.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "quota"}
	if err := env.Kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	explainClusterOnFailure(t, cr, admin)
	waitForConditionMessage(t, toUnstructured(t, cr),
		"the project's quota of instances cannot hold 3 more servers of flavor "+mustEnv(t, "TESTBED_FLAVOR_SMALL")+" (1 server each; 0 of 2 in use): raise the quota or delete servers")

	tag := "etcd-cluster:" + string(cr.GetUID())
	portPages, err := ports.List(adminNet, ports.ListOpts{Description: tag}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ps, _ := ports.ExtractPorts(portPages); len(ps) > 0 {
		t.Errorf("%d ports made for a cluster the quota cannot hold", len(ps))
	}
	srvPages, err := servers.List(admin, servers.ListOpts{AllTenants: true, Tags: tag}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ss, _ := servers.ExtractServers(srvPages); len(ss) > 0 {
		t.Errorf("%d servers made for a cluster the quota cannot hold", len(ss))
	}
	if err := env.Kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
	// The members' SecurityGroup goes too, before its project does.
	sg := &netv1alpha1.SecurityGroup{}
	sg.SetNamespace(ns)
	sg.SetName("tight-members")
	gone(t, sg)
}

// TestEtcdClusterOnOpenStackNoValidHost: a flavor no host can take (more memory than any
// has) makes Nova put the server in ERROR with its fault; the fault is the cluster's
// condition, the provider makes no more servers for it, and deleting the cluster leaves
// nothing in Nova or Neutron.
func TestEtcdClusterOnOpenStackNoValidHost(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	n := newNovaTest(t)
	ns, cc := n.ns, n.cc
	admin, err := env.Compute(ctx, harness.CloudAdmin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := flavors.Create(ctx, admin, flavors.CreateOpts{Name: "huge-" + ns, RAM: 64 << 20, VCPUs: 1, Disk: ptr.To(1)}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flavors.Delete(context.Background(), admin, f.ID).ExtractErr() })

	cr := onServers(newEtcdCluster(ns, "homeless", etcdNew, 1), n.machines(t, f.Name))
	n.create(t, cr)
	waitForConditionMessage(t, toUnstructured(t, cr), "server of homeless-0 is ERROR: No valid host was found")
	sgID := memberGroupID(t, cr)

	// Each attempt reuses the member's server: no new one is made.
	tag := "etcd-cluster:" + string(cr.GetUID())
	time.Sleep(3 * poll)
	pages, err := servers.List(cc, servers.ListOpts{Tags: tag}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ss, _ := servers.ExtractServers(pages); len(ss) != 1 {
		t.Errorf("%d servers of a one-member cluster no host can take, want the one", len(ss))
	}
	if err := env.Kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
	waitNothingLeft(t, cc, cr, sgID)
}
