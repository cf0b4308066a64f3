//go:build integration

package integration

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stackservices/provider-stackservices/test/harness"
)

// The test bed's Nova is what the OpenStack machine backend is proven against: these tests
// prove the test bed itself. A server's user-data really runs (a systemd unit of etcd, as
// the backend writes), at the fixed IP of its Neutron port, reachable from the host; a
// stopped server stops and keeps its disk; a deleted one leaves nothing on the host; and
// the hypervisor puts no address outside the benchmarking range on the host.

func mustEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: source $(cluster/openstack.sh env)", name)
	}
	return v
}

// testNetwork makes a network with one subnet of cidr (gateway .1) in the demo project, and
// deletes both (and any port left on them) when the test ends.
func testNetwork(t *testing.T, name, cidr string) (networkID, subnetID string) {
	t.Helper()
	ctx := harness.Ctx(t)
	n, err := networks.Create(ctx, env.Neutron, networks.CreateOpts{Name: name}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if pages, err := ports.List(env.Neutron, ports.ListOpts{NetworkID: n.ID}).AllPages(ctx); err == nil {
			ps, _ := ports.ExtractPorts(pages)
			for _, p := range ps {
				_ = ports.Delete(ctx, env.Neutron, p.ID).ExtractErr()
			}
		}
		_ = networks.Delete(ctx, env.Neutron, n.ID).ExtractErr()
	})
	sn, err := subnets.Create(ctx, env.Neutron, subnets.CreateOpts{NetworkID: n.ID, CIDR: cidr, IPVersion: gophercloud.IPv4, Name: name}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	return n.ID, sn.ID
}

var subnetsTaken sync.Mutex

// freeServerSubnet picks a /24 of the servers' range (198.19.0.0/16) that no Neutron subnet
// has, and makes the test's network on it: subnets a killed run left behind would otherwise
// overlap the test's, and the hypervisor refuses to plug a server whose subnet the host
// already routes elsewhere.
func freeServerSubnet(t *testing.T, name string) (networkID, subnetID string, cidr netip.Prefix) {
	t.Helper()
	subnetsTaken.Lock()
	defer subnetsTaken.Unlock()
	pages, err := subnets.List(env.Neutron, subnets.ListOpts{}).AllPages(harness.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	all, err := subnets.ExtractSubnets(pages)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, sn := range all {
		used[sn.CIDR] = true
	}
	for third := 200; third < 255; third++ {
		c := netip.MustParsePrefix(fmt.Sprintf("198.19.%d.0/24", third))
		if !used[c.String()] {
			networkID, subnetID = testNetwork(t, name, c.String())
			return networkID, subnetID, c
		}
	}
	t.Fatal("no free /24 left in 198.19.200.0-198.19.254.0: delete the leftover test networks")
	return "", "", netip.Prefix{}
}

// etcdUserData is a #cloud-config like the one the OpenStack machines get: a unit that runs
// etcd from the image, enabled and started by runcmd.
func etcdUserData(name, ip string) string {
	return fmt.Sprintf(`#cloud-config
write_files:
  - path: /etc/systemd/system/etcd-member.service
    permissions: "0644"
    content: |
      [Unit]
      Description=etcd member
      [Service]
      ExecStart=/opt/etcd/v3.6.16/etcd --name %[1]s --data-dir /var/lib/etcd --listen-client-urls http://%[2]s:2379 --advertise-client-urls http://%[2]s:2379 --listen-peer-urls http://%[2]s:2380 --initial-advertise-peer-urls http://%[2]s:2380 --initial-cluster %[1]s=http://%[2]s:2380
      Restart=always
      [Install]
      WantedBy=multi-user.target
runcmd:
  - [systemctl, daemon-reload]
  - [systemctl, enable, --now, etcd-member.service]
`, name, ip)
}

func etcdAt(t *testing.T, ip string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + net.JoinHostPort(ip, "2379")}, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func waitForStatus(t *testing.T, cc *gophercloud.ServiceClient, id, status string) {
	t.Helper()
	harness.Eventually(t, 2*time.Minute, "server "+id+" "+status, func() error {
		s, err := servers.Get(harness.Ctx(t), cc, id).Extract()
		if err != nil {
			return err
		}
		if s.Status == "ERROR" && status != "ERROR" {
			t.Fatalf("server %s went ERROR: %v", id, s.Fault)
		}
		if s.Status != status {
			return fmt.Errorf("status %s", s.Status)
		}
		return nil
	})
}

// netnsOf is the network namespace the hypervisor gives a server.
func netnsOf(id string) string {
	return filepath.Join("/run/netns", "nxvm-"+strings.ReplaceAll(id, "-", "")[:8])
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// explainServerOnFailure logs, when the test fails, what the test bed knows of the server:
// the hypervisor's lines about it and the end of its console (its init's and services'
// output), so that a failure in CI says why the server did not answer.
func explainServerOnFailure(t *testing.T, id string) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if data, err := os.ReadFile(os.Getenv("HYPERVISOR_LOG")); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, id) || strings.Contains(line, "leftover") {
					t.Logf("hypervisor: %s", line)
				}
			}
		}
		console := filepath.Join(os.Getenv("HYPERVISOR_STATE"), "vms", id, "root", "var", "log", "console.log")
		if data, err := os.ReadFile(console); err == nil {
			lines := collapseRepeats(strings.Split(strings.TrimSpace(string(data)), "\n"))
			if len(lines) > 80 {
				lines = slices.Concat(lines[:40], []string{"..."}, lines[len(lines)-40:])
			}
			t.Logf("console of server %s (%d bytes; first and last 40 lines, repeats collapsed):\n%s", id, len(data), strings.Join(lines, "\n"))
		} else {
			t.Logf("no console of server %s: %v", id, err)
		}
	})
}

// collapseRepeats replaces a run of lines that say the same (etcd's JSON lines differ only in
// their time stamp) by its first line and a count: a member that retries in a loop writes
// thousands.
func collapseRepeats(lines []string) []string {
	same := func(a, b string) bool {
		strip := func(l string) string {
			if i := strings.Index(l, `"caller"`); i >= 0 {
				return l[i:]
			}
			return l
		}
		return strip(a) == strip(b)
	}
	var out []string
	for i := 0; i < len(lines); {
		j := i + 1
		for j < len(lines) && same(lines[i], lines[j]) {
			j++
		}
		out = append(out, lines[i])
		if j-i > 1 {
			out = append(out, fmt.Sprintf("    (the line above %d times in all)", j-i))
		}
		i = j
	}
	return out
}

func TestTestBedServersRunTheirUserData(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	cc, err := env.Compute(ctx, harness.CloudDemo)
	if err != nil {
		t.Fatal(err)
	}
	zones := strings.Fields(mustEnv(t, "TESTBED_ZONES"))
	state := mustEnv(t, "HYPERVISOR_STATE")
	netID, subnetID, cidr := freeServerSubnet(t, "testbed-boot")
	ip := cidr.Addr().Next().Next().String() // .2: .1 is the gateway

	port, err := ports.Create(ctx, env.Neutron, ports.CreateOpts{NetworkID: netID, FixedIPs: []ports.IP{{SubnetID: subnetID, IPAddress: ip}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	srv, err := servers.Create(ctx, cc, servers.CreateOpts{
		Name: "testbed-boot", FlavorRef: flavorID(t, cc, mustEnv(t, "TESTBED_FLAVOR_SMALL")), ImageRef: imageID(t, mustEnv(t, "TESTBED_IMAGE")),
		AvailabilityZone: zones[len(zones)-1], Networks: []servers.Network{{Port: port.ID}},
		UserData: []byte(etcdUserData("m0", ip)),
	}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = servers.Delete(context.Background(), cc, srv.ID).ExtractErr()
		}
	})
	explainServerOnFailure(t, srv.ID)
	waitForStatus(t, cc, srv.ID, "ACTIVE")
	active := time.Since(start)

	kv := etcdAt(t, ip)
	harness.Eventually(t, time.Minute, "etcd of the server answers at its fixed IP", func() error {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := kv.Put(c, "written", "before the stop")
		return err
	})
	t.Logf("server ACTIVE %s after the POST, etcd answering %s after it", active.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	got, err := servers.Get(ctx, cc, srv.ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if got.AvailabilityZone != zones[len(zones)-1] {
		t.Errorf("server in zone %q, want %q", got.AvailabilityZone, zones[len(zones)-1])
	}

	// Stopped: nothing runs, the disk stays.
	if err := servers.Stop(ctx, cc, srv.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	waitForStatus(t, cc, srv.ID, "SHUTOFF")
	harness.Eventually(t, time.Minute, "the stopped server's namespace gone", func() error {
		if exists(netnsOf(srv.ID)) {
			return fmt.Errorf("%s still exists", netnsOf(srv.ID))
		}
		return nil
	})
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	if _, err := kv.Get(c, "written"); err == nil {
		t.Error("etcd still answers on a stopped server")
	}
	cancel()

	// Started again: the unit runs at boot, with the data of before.
	if err := servers.Start(ctx, cc, srv.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	waitForStatus(t, cc, srv.ID, "ACTIVE")
	harness.Eventually(t, time.Minute, "the restarted server's etcd has the key written before the stop", func() error {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		r, err := kv.Get(c, "written")
		if err != nil {
			return err
		}
		if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "before the stop" {
			return fmt.Errorf("got %v", r.Kvs)
		}
		return nil
	})

	// Deleted: nothing of it stays on the host; the port made beforehand stays, unbound.
	if err := servers.Delete(ctx, cc, srv.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	deleted = true
	harness.Eventually(t, 2*time.Minute, "nothing of the deleted server left on the host", func() error {
		for _, p := range []string{netnsOf(srv.ID), filepath.Join(state, "vms", srv.ID), "/sys/class/net/nxbr-" + strings.ReplaceAll(subnetID, "-", "")[:8]} {
			if exists(p) {
				return fmt.Errorf("%s still exists", p)
			}
		}
		return nil
	})
	harness.Eventually(t, time.Minute, "the port unbound", func() error {
		p, err := ports.Get(ctx, env.Neutron, port.ID).Extract()
		if err != nil {
			return err
		}
		if p.DeviceID != "" {
			return fmt.Errorf("port still on device %s", p.DeviceID)
		}
		return nil
	})
}

// A server on a subnet outside 198.18.0.0/15 is ACTIVE in Nova, but the hypervisor refuses to
// put its addresses on the host: a tenant's subnet must never shadow a routed network.
func TestTestBedKeepsOtherAddressesOffTheHost(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	cc, err := env.Compute(ctx, harness.CloudDemo)
	if err != nil {
		t.Fatal(err)
	}
	netID, _ := testNetwork(t, "testbed-private", "10.251.7.0/24")
	srv, err := servers.Create(ctx, cc, servers.CreateOpts{
		Name: "testbed-private", FlavorRef: flavorID(t, cc, mustEnv(t, "TESTBED_FLAVOR_SMALL")), ImageRef: imageID(t, mustEnv(t, "TESTBED_IMAGE")),
		Networks: []servers.Network{{UUID: netID}}, UserData: []byte("#cloud-config\nruncmd:\n  - [touch, /tmp/ran]\n"),
	}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = servers.Delete(context.Background(), cc, srv.ID).ExtractErr() })
	waitForStatus(t, cc, srv.ID, "ACTIVE")
	logPath := mustEnv(t, "HYPERVISOR_LOG")
	harness.Eventually(t, time.Minute, "the hypervisor refused the server", func() error {
		data, err := os.ReadFile(logPath)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, srv.ID) && strings.Contains(line, "outside 198.18.0.0/15") {
				return nil
			}
		}
		return fmt.Errorf("no refusal of %s in %s", srv.ID, logPath)
	})
	if exists(netnsOf(srv.ID)) {
		t.Errorf("the server got a namespace on the host")
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifaces {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if strings.HasPrefix(a.String(), "10.251.7.") {
				t.Errorf("interface %s holds %s", i.Name, a)
			}
		}
	}
}

func flavorID(t *testing.T, cc *gophercloud.ServiceClient, name string) string {
	t.Helper()
	pages, err := flavors.ListDetail(cc, flavors.ListOpts{}).AllPages(harness.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	all, err := flavors.ExtractFlavors(pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		if f.Name == name {
			return f.ID
		}
	}
	t.Fatalf("no flavor %s in the test bed", name)
	return ""
}

func imageID(t *testing.T, name string) string {
	t.Helper()
	ctx := harness.Ctx(t)
	ic, err := env.Image(ctx, harness.CloudDemo)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := images.List(ic, images.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := images.ExtractImages(pages)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("%d images named %s in the test bed, want 1", len(all), name)
	}
	return all[0].ID
}
