package openstack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"

	osclient "github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/machines"
)

// cloud is an in-memory Nova and Neutron, for the backend's bookkeeping: what it makes, finds
// and deletes. The real ones are in the integration tests.
type cloud struct {
	// mu: the backend starts the members of a bootstrap at once.
	mu      sync.Mutex
	ports   []osclient.Port
	servers []osclient.Server
	groups  []osclient.ServerGroup
	created []osclient.ServerSettings
	next    int
	// hideNew: servers are listed without their tags (so not by tag) until scheduled.
	hideNew   bool
	scheduled map[string]bool
	// deleting servers vanish after this many lists.
	vanishAfter int
	deleting    map[string]int
	// limits is the project's quota (zero: unlimited).
	limits *osclient.Limits
}

func (c *cloud) id(kind string) string { c.next++; return fmt.Sprintf("%s-%d", kind, c.next) }

func (c *cloud) FindFlavor(_ context.Context, n string) (osclient.Flavor, error) {
	if n == "gone" {
		return osclient.Flavor{}, fmt.Errorf("there is no flavor %q", n)
	}
	return osclient.Flavor{ID: "flavor-" + n, Name: n, VCPUs: 2, RAM: 2048}, nil
}

func (c *cloud) Limits(context.Context) (osclient.Limits, error) {
	if c.limits == nil {
		return osclient.Limits{MaxInstances: -1, MaxCores: -1, MaxRAM: -1}, nil
	}
	return *c.limits, nil
}
func (c *cloud) FindImage(_ context.Context, n string) (string, error) { return "image-" + n, nil }
func (c *cloud) FindNetwork(_ context.Context, n string) (string, error) {
	return "net-" + n, nil
}
func (c *cloud) FindSubnet(_ context.Context, n string) (string, string, error) {
	return "net-of-" + n, "subnet-" + n, nil
}

func (c *cloud) ListServersByTag(_ context.Context, tag string) ([]osclient.Server, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []osclient.Server
	for _, s := range c.servers {
		if n, ok := c.deleting[s.ID]; ok {
			if n >= c.vanishAfter {
				continue
			}
			c.deleting[s.ID]++
		}
		if c.hideNew && !c.scheduled[s.ID] {
			continue
		}
		if slices.Contains(s.Tags, tag) {
			out = append(out, s)
		}
	}
	c.servers = slices.DeleteFunc(c.servers, func(s osclient.Server) bool {
		n, ok := c.deleting[s.ID]
		return ok && n >= c.vanishAfter
	})
	return out, nil
}

func (c *cloud) CreateServer(_ context.Context, s osclient.ServerSettings) (*osclient.Server, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.created = append(c.created, s)
	// No zone yet: Nova shows it once the server is scheduled, after the create returned.
	srv := osclient.Server{ID: c.id("server"), Name: s.Name, Status: "ACTIVE", Tags: s.Tags, Metadata: s.Metadata}
	c.servers = append(c.servers, srv)
	return &srv, nil
}

// schedule puts every server in the zone it was asked for, as Nova's scheduler does some
// time after the create.
func (c *cloud) schedule() {
	for i, s := range c.servers {
		for _, asked := range c.created {
			if asked.Name == s.Name {
				c.servers[i].Zone = asked.Zone
			}
		}
	}
}

func (c *cloud) DeleteServer(_ context.Context, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.servers {
		if s.ID == id {
			if c.deleting == nil {
				c.deleting = map[string]int{}
			}
			if _, ok := c.deleting[id]; !ok {
				c.deleting[id] = 0
			}
			return nil
		}
	}
	return gophercloud.ErrUnexpectedResponseCode{Actual: 404}
}

func (c *cloud) ListServerGroups(_ context.Context, name string) ([]osclient.ServerGroup, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []osclient.ServerGroup
	for _, g := range c.groups {
		if g.Name == name {
			out = append(out, g)
		}
	}
	return out, nil
}

func (c *cloud) CreateServerGroup(_ context.Context, name, policy string) (*osclient.ServerGroup, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := osclient.ServerGroup{ID: c.id("group"), Name: name, Policy: policy}
	c.groups = append(c.groups, g)
	return &g, nil
}

func (c *cloud) DeleteServerGroup(_ context.Context, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.groups = slices.DeleteFunc(c.groups, func(g osclient.ServerGroup) bool { return g.ID == id })
	return nil
}

func (c *cloud) CreatePort(_ context.Context, s osclient.PortSettings) (*osclient.Port, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := osclient.Port{ID: c.id("port"), Name: s.Name, Description: s.Description, NetworkID: s.NetworkID, SecurityGroups: s.SecurityGroups,
		FixedIPs: []osclient.FixedIP{{SubnetID: s.SubnetID, IPAddress: fmt.Sprintf("198.19.9.%d", 10+len(c.ports))}}}
	c.ports = append(c.ports, p)
	return &p, nil
}

func (c *cloud) ListPortsByDescription(_ context.Context, d string) ([]osclient.Port, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []osclient.Port
	for _, p := range c.ports {
		if p.Description == d {
			out = append(out, p)
		}
	}
	return out, nil
}

func (c *cloud) DeletePort(_ context.Context, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.ports {
		for _, s := range c.servers {
			// Nova still has the server: the backend must wait until it has not.
			if p.ID == id && portName(s.Metadata[metaMember]) == p.Name {
				return fmt.Errorf("port %s deleted while its server %s still exists", id, s.ID)
			}
		}
	}
	c.ports = slices.DeleteFunc(c.ports, func(p osclient.Port) bool { return p.ID == id })
	return nil
}

func newBackend(c *cloud, zones ...string) *Backend {
	return New(Options{
		Compute: c, Networks: c, Images: c,
		Spec: Spec{Flavor: "small", Image: "etcd", Subnet: "members", AvailabilityZones: zones,
			ServerGroupPolicy: "anti-affinity", SecurityGroups: []string{"extra"}, EtcdPath: "/opt/etcd/v{version}/etcd"},
		SecurityGroup: func(context.Context) (string, error) { return "members-sg", nil },
		Sleep:         func(context.Context, time.Duration) error { return nil },
	})
}

func memberConfig() machines.MemberConfig {
	return machines.MemberConfig{
		Version: "3.6.16", InitialCluster: "db-0=https://198.19.9.10:2380", InitialClusterState: "new", InitialClusterToken: "uid",
		CA: []byte("-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n"), Cert: []byte("cert"), Key: []byte("key"),
		CertNotAfter: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	c := &cloud{vanishAfter: 2}
	b := newBackend(c, "az-1", "az-2")

	// Allocate is idempotent: the second call finds the port the first made.
	m, err := b.Allocate(ctx, "uid", "db-0")
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Allocate(ctx, "uid", "db-0")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ports) != 1 || again.Address != m.Address {
		t.Fatalf("a second Allocate made %d ports (addresses %s, %s), want the first found", len(c.ports), m.Address, again.Address)
	}
	want := machines.Machine{Cluster: "uid", Name: "db-0", Address: "198.19.9.10", PeerURL: "https://198.19.9.10:2380",
		ClientURL: "https://198.19.9.10:2379", State: machines.Allocated}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("Allocate: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"members-sg", "extra"}, c.ports[0].SecurityGroups); diff != "" {
		t.Errorf("port security groups: -want, +got:\n%s", diff)
	}
	if _, err := b.Start(ctx, "uid", "db-9", memberConfig()); err == nil {
		t.Error("Start of a member that was never allocated succeeded")
	}

	// Three members over two zones: the zone with the fewest goes next.
	for _, n := range []string{"db-1", "db-2"} {
		if _, err := b.Allocate(ctx, "uid", n); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"db-0", "db-1", "db-2"} {
		if _, err := b.Start(ctx, "uid", n, memberConfig()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Start(ctx, "uid", "db-0", memberConfig()); err != nil {
		t.Fatal(err)
	}
	var zones []string
	for _, s := range c.created {
		zones = append(zones, s.Zone)
		if s.ServerGroupID == "" || s.PortID == "" || !slices.Contains(s.Tags, identity("uid")) {
			t.Errorf("server %s: group %q, port %q, tags %v", s.Name, s.ServerGroupID, s.PortID, s.Tags)
		}
	}
	if diff := cmp.Diff([]string{"az-1", "az-2", "az-1"}, zones); diff != "" {
		t.Errorf("zones (a second Start of db-0 must make nothing): -want, +got:\n%s", diff)
	}
	if len(c.groups) != 1 || c.groups[0].Policy != "anti-affinity" {
		t.Errorf("server groups %v, want one with policy anti-affinity", c.groups)
	}

	c.schedule()
	ms, err := b.List(ctx, "uid")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, fmt.Sprintf("%s %s %s %s", m.Name, m.State, m.Version, m.Server.Zone))
	}
	if diff := cmp.Diff([]string{"db-0 Running 3.6.16 az-1", "db-1 Running 3.6.16 az-2", "db-2 Running 3.6.16 az-1"}, got); diff != "" {
		t.Errorf("List: -want, +got:\n%s", diff)
	}
	if other, _ := b.List(ctx, "another-cluster"); len(other) != 0 {
		t.Errorf("another cluster sees %d machines", len(other))
	}

	// Delete waits for the server before deleting the port; the group goes with the last.
	for _, n := range []string{"db-0", "db-1"} {
		if err := b.Delete(ctx, "uid", n); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.groups) != 1 {
		t.Error("the server group went before the last machine")
	}
	if err := b.Delete(ctx, "uid", "db-2"); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "uid", "db-2"); err != nil {
		t.Errorf("deleting a machine that is gone: %v", err)
	}
	if len(c.ports) != 0 || len(c.servers) != 0 || len(c.groups) != 0 {
		t.Errorf("left behind: %d ports, %d servers, %d server groups", len(c.ports), len(c.servers), len(c.groups))
	}
}

func TestStates(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	port := &osclient.Port{FixedIPs: []osclient.FixedIP{{IPAddress: "198.19.9.10"}}}
	server := func(status, created string) []osclient.Server {
		return []osclient.Server{{ID: "s", Status: status, Metadata: map[string]string{"etcd-created": created}}}
	}
	cases := map[string]struct {
		port    *osclient.Port
		servers []osclient.Server
		want    machines.State
	}{
		"PortOnly":          {port: port, want: machines.Allocated},
		"Active":            {port: port, servers: server("ACTIVE", ""), want: machines.Running},
		"Building":          {port: port, servers: server("BUILD", now.Add(-time.Minute).Format(time.RFC3339)), want: machines.Running},
		"StuckBuilding":     {port: port, servers: server("BUILD", now.Add(-time.Hour).Format(time.RFC3339)), want: machines.Stopped},
		"Shutoff":           {port: port, servers: server("SHUTOFF", ""), want: machines.Stopped},
		"Error":             {port: port, servers: server("ERROR", ""), want: machines.Stopped},
		"PortDeletedByHand": {servers: server("ACTIVE", ""), want: machines.Stopped},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := New(Options{Now: func() time.Time { return now }})
			if got := b.machine("uid", "db-0", tc.port, tc.servers).State; got != tc.want {
				t.Errorf("state %s, want %s", got, tc.want)
			}
		})
	}
}

// TestCheckCapacity: n more servers of the flavor (2 vCPUs, 2048 MiB) against each limit of
// the project's quota; -1 is unlimited.
func TestCheckCapacity(t *testing.T) {
	unlimited := osclient.Limits{MaxInstances: -1, MaxCores: -1, MaxRAM: -1}
	with := func(f func(*osclient.Limits)) *osclient.Limits { l := unlimited; f(&l); return &l }
	cases := map[string]struct {
		limits *osclient.Limits
		n      int
		want   string
	}{
		"Unlimited":    {limits: &unlimited, n: 99},
		"InstancesFit": {limits: with(func(l *osclient.Limits) { l.MaxInstances, l.UsedInstances = 5, 2 }), n: 3},
		"InstancesShort": {limits: with(func(l *osclient.Limits) { l.MaxInstances, l.UsedInstances = 4, 2 }), n: 3,
			want: "the project's quota of instances cannot hold 3 more servers of flavor small (1 server each; 2 of 4 in use): raise the quota or delete servers"},
		"CoresShort": {limits: with(func(l *osclient.Limits) { l.MaxCores, l.UsedCores = 6, 1 }), n: 3,
			want: "the project's quota of cores cannot hold 3 more servers of flavor small (2 vCPUs each; 1 of 6 in use): raise the quota or delete servers"},
		"RAMShort": {limits: with(func(l *osclient.Limits) { l.MaxRAM = 4096 }), n: 3,
			want: "the project's quota of RAM (MiB) cannot hold 3 more servers of flavor small (2048 MiB each; 0 of 4096 in use): raise the quota or delete servers"},
		"ExactlyFull": {limits: with(func(l *osclient.Limits) { l.MaxInstances, l.UsedInstances = 3, 0 }), n: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := newBackend(&cloud{limits: tc.limits}).CheckCapacity(context.Background(), tc.n)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckCapacity(%d):\n got %q\nwant %q", tc.n, got, tc.want)
			}
		})
	}
}

func TestZoneFor(t *testing.T) {
	in := func(zones ...string) map[string][]osclient.Server {
		m := map[string][]osclient.Server{}
		for i, z := range zones {
			m[fmt.Sprint(i)] = []osclient.Server{{Zone: z}}
		}
		return m
	}
	cases := map[string]struct {
		zones   []string
		servers map[string][]osclient.Server
		want    string
	}{
		"NoZones":      {servers: in("az-1"), want: ""},
		"FirstOnATie":  {zones: []string{"b", "a"}, want: "b"},
		"Fewest":       {zones: []string{"a", "b", "c"}, servers: in("a", "b", "a"), want: "c"},
		"ZoneNotInUse": {zones: []string{"a", "b"}, servers: in("a", "elsewhere"), want: "b"},
		// Asked for a, not scheduled yet: Nova shows no zone, the metadata says a.
		"NotScheduledYet": {zones: []string{"a", "b"}, servers: map[string][]osclient.Server{"0": {{Metadata: map[string]string{metaZone: "a"}}}}, want: "b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := zoneFor(tc.zones, tc.servers); got != tc.want {
				t.Errorf("zoneFor = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBootstrapStartsAtOnce: the members of a bootstrap start at the same time (the
// controller calls Start from one goroutine each), and still spread over the zones and share
// one server group. Nova lists a server it has just accepted without its tags here, as it
// may before the server is scheduled.
func TestBootstrapStartsAtOnce(t *testing.T) {
	ctx := context.Background()
	c := &cloud{deleting: map[string]int{}, hideNew: true}
	b := newBackend(c, "az-1", "az-2")
	names := []string{"db-0", "db-1", "db-2"}
	for _, n := range names {
		if _, err := b.Allocate(ctx, "uid", n); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			if _, err := b.Start(ctx, "uid", n, memberConfig()); err != nil {
				t.Errorf("Start %s: %v", n, err)
			}
		})
	}
	wg.Wait()
	zones := map[string]int{}
	for _, s := range c.created {
		zones[s.Zone]++
	}
	if diff := cmp.Diff(map[string]int{"az-1": 2, "az-2": 1}, zones); diff != "" {
		t.Errorf("servers per zone: -want, +got:\n%s", diff)
	}
	if len(c.groups) != 1 {
		t.Errorf("%d server groups, want 1", len(c.groups))
	}
}

// TestMissingFlavorMakesNothing: a flavor that does not exist fails the member before its
// port is made, with a message that names it.
func TestMissingFlavorMakesNothing(t *testing.T) {
	c := &cloud{deleting: map[string]int{}}
	b := newBackend(c)
	b.o.Spec.Flavor = "gone"
	_, err := b.Allocate(context.Background(), "uid", "db-0")
	if err == nil || !strings.Contains(err.Error(), `there is no flavor "gone"`) {
		t.Errorf("Allocate: %v, want an error that names the flavor", err)
	}
	if len(c.ports) != 0 || len(c.servers) != 0 {
		t.Errorf("%d ports and %d servers made for a flavor that does not exist", len(c.ports), len(c.servers))
	}
}

// TestStartRefusesAnIdentity: an age identity would outlive the restore in the server's
// user-data; Start refuses it before it makes anything.
func TestStartRefusesAnIdentity(t *testing.T) {
	c := &cloud{}
	b := newBackend(c)
	if _, err := b.Allocate(context.Background(), "uid", "db-0"); err != nil {
		t.Fatal(err)
	}
	cfg := memberConfig()
	cfg.Restore = &machines.RestoreSource{URL: "https://s3/k", Size: 1, SHA256: strings.Repeat("cd", 32), AgeIdentity: "AGE-SECRET-KEY-1XYZ"}
	if _, err := b.Start(context.Background(), "uid", "db-0", cfg); err == nil || len(c.created) != 0 {
		t.Errorf("Start with an identity: %v, %d servers made; want a refusal and none", err, len(c.created))
	}
}
