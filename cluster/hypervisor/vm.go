package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The host side of a server: its network namespace on a bridge of its subnet, its disk (a
// directory), and the guest init that runs in both.

// allowed is where servers' addresses may come from: a benchmarking range, never a routed
// private network (the host takes the subnet's gateway address on a bridge).
var allowed = netip.MustParsePrefix("198.18.0.0/15")

// haltTimeout is how long a server's init has to stop its services before it is killed.
const haltTimeout = 20 * time.Second

// nic is a server's network interface as Neutron describes it.
type nic struct {
	MAC      string
	IP       netip.Addr
	Subnet   netip.Prefix
	Gateway  netip.Addr
	SubnetID string
}

// check refuses a subnet the test bed must not put on the host.
func (n nic) check() error {
	if !n.Subnet.IsValid() || !n.IP.IsValid() || !n.Gateway.IsValid() {
		return errors.New("the server's port has no fixed IP on a subnet with a gateway")
	}
	if n.Subnet.Bits() < allowed.Bits() || !allowed.Contains(n.Subnet.Addr()) {
		return fmt.Errorf("subnet %s is outside %s: the test bed only puts benchmarking addresses on the host", n.Subnet, allowed)
	}
	if !n.Subnet.Contains(n.IP) || !n.Subnet.Contains(n.Gateway) {
		return fmt.Errorf("address %s or gateway %s is outside subnet %s", n.IP, n.Gateway, n.Subnet)
	}
	return nil
}

// Names of a server's host objects. Linux interface names have at most 15 bytes.
func netnsName(id string) string  { return "nxvm-" + short(id) }
func vethName(id string) string   { return "nxh-" + short(id) }
func bridgeName(id string) string { return "nxbr-" + short(id) }

func short(id string) string {
	id = strings.ReplaceAll(id, "-", "")
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// host runs servers under dir: dir/vms/<server id>/{root,user-data,init.pid}.
type host struct {
	dir   string
	image string
	self  string
}

func (h *host) vmDir(id string) string { return filepath.Join(h.dir, "vms", id) }

// ip runs iproute2.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

func netnsExists(name string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", name))
	return err == nil
}

// ensureBridge makes the subnet's bridge with the gateway address, once. A subnet that
// overlaps an address the host already holds elsewhere is refused: two routes to one prefix
// would send the server's traffic to whichever came first (a leftover bridge, a node's).
func ensureBridge(n nic) error {
	br := bridgeName(n.SubnetID)
	if linkExists(br) {
		return nil
	}
	if iface, addr, ok := hostAddressIn(n.Subnet); ok {
		return fmt.Errorf("subnet %s overlaps %s, which interface %s of the host holds: the server would not be reachable", n.Subnet, addr, iface)
	}
	if err := ip("link", "add", br, "type", "bridge"); err != nil {
		return err
	}
	gw := netip.PrefixFrom(n.Gateway, n.Subnet.Bits())
	if err := ip("addr", "add", gw.String(), "dev", br); err != nil {
		return err
	}
	return ip("link", "set", br, "up")
}

// boot plugs the server into its subnet and starts its init.
func (h *host) boot(id, hostname string, userData []byte, n nic) error {
	if err := n.check(); err != nil {
		return err
	}
	dir := h.vmDir(id)
	if err := os.MkdirAll(filepath.Join(dir, "root", "var", "log"), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "user-data"), userData, 0o600); err != nil {
		return err
	}
	if err := ensureBridge(n); err != nil {
		return err
	}
	ns, veth := netnsName(id), vethName(id)
	// What an earlier, interrupted boot left.
	h.unplug(id)
	steps := [][]string{
		{"netns", "add", ns},
		{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"link", "set", veth, "master", bridgeName(n.SubnetID), "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "link", "set", "eth0", "address", n.MAC},
		{"-n", ns, "addr", "add", netip.PrefixFrom(n.IP, n.Subnet.Bits()).String(), "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "route", "add", "default", "via", n.Gateway.String()},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			h.unplug(id)
			return err
		}
	}
	console, err := os.OpenFile(filepath.Join(dir, "root", "var", "log", "console.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		h.unplug(id)
		return err
	}
	defer console.Close() //nolint:errcheck // The child has its own descriptor.
	cmd := exec.Command("ip", "netns", "exec", ns,
		"unshare", "--mount", "--propagation", "private",
		h.self, "guest", "--root", filepath.Join(dir, "root"), "--user-data", filepath.Join(dir, "user-data"),
		"--image", h.image, "--instance-id", id, "--hostname", hostname)
	cmd.Stdout, cmd.Stderr = console, console
	// Its own session: the host's signals to the hypervisor never reach the server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		h.unplug(id)
		return err
	}
	pid := cmd.Process.Pid
	// Reaped in the background; the PID file is how halt finds it (after a restart too).
	go func() { _ = cmd.Wait() }()
	return os.WriteFile(filepath.Join(dir, "init.pid"), []byte(strconv.Itoa(pid)), 0o600)
}

// initPID is the PID of the server's init while it runs. ip netns exec and unshare exec
// into the next program, so the PID started is the init's.
func (h *host) initPID(id string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(h.vmDir(id), "init.pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	// A PID reused by another program is not the server's.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), h.vmDir(id)) {
		return 0, false
	}
	return pid, true
}

func (h *host) running(id string) bool {
	_, ok := h.initPID(id)
	return ok || netnsExists(netnsName(id))
}

// halt stops the server's init (which stops its services), kills what is left of its
// session, and unplugs it. Its disk stays.
func (h *host) halt(ctx context.Context, id string) {
	if pid, ok := h.initPID(id); ok {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(haltTimeout)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			if _, ok := h.initPID(id); !ok {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The init's session holds everything the server ran (its services lead their own
		// process groups, in the same session).
		killSession(pid)
		for i := 0; i < 50; i++ {
			if _, ok := h.initPID(id); !ok {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	_ = os.Remove(filepath.Join(h.vmDir(id), "init.pid"))
	h.unplug(id)
}

// unplug deletes the server's network namespace and its veth pair. Deleting the namespace
// deletes the pair with it, a moment later: only a pair that outlives it is deleted here.
func (h *host) unplug(id string) {
	if netnsExists(netnsName(id)) {
		if err := ip("netns", "del", netnsName(id)); err != nil {
			log.Printf("server %s: %v", id, err)
		}
	}
	for i := 0; i < 20 && linkExists(vethName(id)); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if linkExists(vethName(id)) {
		if err := ip("link", "del", vethName(id)); err != nil && linkExists(vethName(id)) {
			log.Printf("server %s: %v", id, err)
		}
	}
}

// destroy halts the server and deletes its disk.
func (h *host) destroy(ctx context.Context, id string) {
	h.halt(ctx, id)
	if err := os.RemoveAll(h.vmDir(id)); err != nil {
		log.Printf("server %s: %v", id, err)
	}
}

// known lists the servers that have a disk here.
func (h *host) known() []string {
	entries, err := os.ReadDir(filepath.Join(h.dir, "vms"))
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	return ids
}

// removeBridges deletes the subnets' bridges once no server is plugged into them.
func removeBridges() {
	entries, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "nxbr-") {
			continue
		}
		ports, _ := os.ReadDir(filepath.Join("/sys/class/net", e.Name(), "brif"))
		if len(ports) == 0 {
			if err := ip("link", "del", e.Name()); err != nil {
				log.Printf("%v", err)
			}
		}
	}
}

// hostAddressIn reports an address of the host's interfaces that lies in (or contains) the
// prefix.
func hostAddressIn(p netip.Prefix) (iface string, addr netip.Prefix, found bool) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", netip.Prefix{}, false
	}
	for _, i := range ifaces {
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			ones, _ := ipn.Mask.Size()
			have := netip.PrefixFrom(ip.Unmap(), ones)
			if p.Overlaps(have) {
				return i.Name, have, true
			}
		}
	}
	return "", netip.Prefix{}, false
}

// holdRange makes the servers' range unreachable from the host but through the subnets'
// bridges, whose routes are more specific: a packet to a server that is not plugged in (not
// booted yet, halted, deleted) fails on the host at once, instead of leaving it by the
// default route, where something else may answer and keep the connection.
func holdRange() error {
	out, err := exec.Command("ip", "route", "add", "unreachable", allowed.String()).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "File exists") {
		return fmt.Errorf("ip route add unreachable %s: %w: %s", allowed, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// releaseRange removes holdRange's route.
func releaseRange() {
	if err := ip("route", "del", "unreachable", allowed.String()); err != nil {
		log.Printf("%v", err)
	}
}

// sweepHost removes what a killed test bed left on the host: servers' namespaces (and what
// still runs in them) and subnets' bridges. The test bed's daemons listen on fixed ports, so
// one test bed runs on a host at a time, and every nxvm- namespace and nxbr- bridge is a
// leftover, possibly of another checkout's state directory that this run knows nothing of.
// Left in place, a leftover bridge holding a gateway address would take the traffic of a new
// subnet with the same range.
func sweepHost() {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "nxvm-") {
			continue
		}
		out, err := exec.Command("ip", "netns", "pids", e.Name()).Output()
		if err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if err := ip("netns", "del", e.Name()); err != nil {
			log.Printf("leftover server namespace: %v", err)
		} else {
			log.Printf("removed leftover server namespace %s", e.Name())
		}
	}
	links, _ := os.ReadDir("/sys/class/net")
	for _, l := range links {
		if strings.HasPrefix(l.Name(), "nxh-") {
			_ = ip("link", "del", l.Name())
		}
	}
	removeBridges()
}

// killSession kills every process of session sid.
func killSession(sid int) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && s == sid {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
