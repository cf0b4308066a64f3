// Package openstack runs etcd members on Nova servers, one per member.
//
// Allocate makes the member's Neutron port first: its fixed IP is the member's address, known
// before the member joins the cluster (its peer URL goes into the membership, its address into
// its certificate). Start boots a server on that port whose cloud-init user-data writes the
// member's certificate and key and a systemd unit that runs etcd from the image. Delete deletes
// the server, waits until Nova has, then deletes the port; the cluster's server group goes with
// its last machine. List reads the ports by the cluster's identity (in their description, which
// Neutron takes in the create call) and the servers by the cluster's tag (which Nova takes in
// the create call), so nothing is ever made that List cannot find.
package openstack

import (
	"context"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	osclient "github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/machines"
)

const (
	errListPorts        = "cannot list the cluster's ports"
	errListServers      = "cannot list the cluster's servers"
	errCreatePort       = "cannot create the member's port"
	errCreateServer     = "cannot create the member's server"
	errDeleteServer     = "cannot delete the member's server"
	errDeletePort       = "cannot delete the member's port"
	errServerGroup      = "cannot find or create the cluster's server group"
	errDeleteSrvGroup   = "cannot delete the cluster's server group"
	errNetwork          = "cannot find the members' network or subnet"
	errFlavor           = "cannot find the members' flavor"
	errImage            = "cannot find the members' image"
	errSecurityGroup    = "the cluster's security group is not ready"
	errNoAddress        = "the member's port has no fixed IP"
	errFmtNotAllocated  = "there is no port for member %s: allocate it first"
	errFmtStillDeleting = "the server of member %s is still being deleted; its port goes once it is gone"
	errLimits           = "cannot read the project's compute quota"
	errEncryptedRestore = "an encrypted snapshot cannot be restored onto servers: its identity would stay in their user-data"
	errListVolumes      = "cannot list the cluster's boot volumes"
	errCreateVolume     = "cannot create the member's boot volume"
	errDeleteVolume     = "cannot delete the member's boot volume"
	errFmtVolumeBusy    = "the boot volume of member %s is %s: its server boots once Cinder has made it"
	errFmtVolumeInUse   = "the boot volume of member %s is %s: Cinder deletes it once it is at rest; the next attempt does"
	errFmtVolumeFailed  = "Cinder could not make the boot volume of member %s (status %s): it is deleted and made again"
	errFmtQuota         = "the project's quota of %s cannot hold %d more servers of flavor %s (%d %s each; %d of %d in use): raise the quota or delete servers"

	// Metadata keys and tag prefixes that tie servers and ports to a cluster and a member.
	clusterTagPrefix = "etcd-cluster:"
	metaMember       = "etcd-member"
	metaVersion      = "etcd-version"
	metaCertNotAfter = "etcd-cert-not-after"
	// metaZone is the zone the server was asked for: Nova shows the zone it runs in only
	// once it is scheduled, and members of a bootstrap are all asked for before any is.
	metaZone = "etcd-zone"
	// metaCreated is when Start asked for the server (a server building for too long is
	// replaced).
	metaCreated = "etcd-created"
	// metaCluster ties a boot volume to its cluster (Cinder lists volumes by metadata).
	metaCluster       = "etcd-cluster"
	portNamePrefix    = "etcd-"
	serverGroupPrefix = "etcd-"

	// deleteWait is how long Delete waits for Nova to finish deleting a server before it
	// returns (and is called again).
	deleteWait = 30 * time.Second
	// volumeWait is how long Start waits for Cinder to make a boot volume before it returns
	// (and is called again).
	volumeWait = 30 * time.Second
)

// Spec is where and how a cluster's servers are made.
type Spec struct {
	Flavor, Image string
	// Network or Subnet (name or ID): exactly one is set.
	Network, Subnet   string
	AvailabilityZones []string
	ServerGroupPolicy string
	KeyPair           string
	// SecurityGroups are added to the cluster's own group on every port.
	SecurityGroups []string
	// EtcdPath is where the image has etcd; {version} stands for the version.
	EtcdPath string
	// ReleaseURL, when set, is where a server without etcd at EtcdPath downloads the
	// release tarball of its version ({version} stands for it), which must have the SHA-256
	// Checksums give for its file name.
	ReleaseURL string
	Checksums  Checksums
	// Version is the etcd version the cluster asks for: a new machine is allocated only
	// if its release can be had.
	Version string
	// BootVolumeGiB, when set, boots each server from a Cinder volume of that size made
	// from the image (Volumes must be set), which is deleted with the server.
	BootVolumeGiB int
	// BuildTimeout: a server still building after this is reported Stopped, so that the
	// member is replaced.
	BuildTimeout time.Duration
	// BootGrace: how long after its create a server may take to run its member (build,
	// boot, cloud-init, etcd's start) before the member counts as unhealthy.
	BootGrace time.Duration
}

// Options of a cluster's machines.
type Options struct {
	Compute  osclient.Compute
	Networks osclient.Networks
	Images   osclient.Images
	// Volumes is Cinder, for boot volumes (nil when Spec.BootVolumeGiB is 0).
	Volumes osclient.Volumes
	Spec    Spec
	// SecurityGroup returns the ID of the cluster's own security group (2380 from members,
	// 2379 from members, the provider and the client CIDRs), or an error while it is not
	// ready. The caller makes it (a SecurityGroup managed resource).
	SecurityGroup func(ctx context.Context) (string, error)
	Now           func() time.Time
	Sleep         func(context.Context, time.Duration) error
}

// Backend is the OpenStack machines backend of one cluster's settings.
type Backend struct {
	o Options

	// placing serializes where servers go: members of a bootstrap start at once, and each
	// must see the zones and the server group the others were given.
	placing sync.Mutex
	// started are the servers this backend asked for, by member name: Nova may list a
	// server it has just accepted without its tags, or without a zone.
	started map[string]osclient.Server
}

var _ machines.Machines = &Backend{}

// New returns a backend.
func New(o Options) *Backend {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = machines.Sleep
	}
	if o.Spec.BuildTimeout == 0 {
		o.Spec.BuildTimeout = 10 * time.Minute
	}
	if o.Spec.BootGrace == 0 {
		o.Spec.BootGrace = 5 * time.Minute
	}
	return &Backend{o: o, started: map[string]osclient.Server{}}
}

// identity is the description of the cluster's ports and the tag of its servers.
func identity(cluster string) string { return clusterTagPrefix + cluster }

func portName(name string) string { return portNamePrefix + name }

func serverGroupName(cluster string) string { return serverGroupPrefix + cluster }

// found is what OpenStack holds of a cluster.
type found struct {
	ports   map[string]osclient.Port     // by member name
	servers map[string][]osclient.Server // by member name
	volumes map[string][]osclient.Volume // by member name
}

func (b *Backend) find(ctx context.Context, cluster string) (*found, error) {
	ports, err := b.o.Networks.ListPortsByDescription(ctx, identity(cluster))
	if err != nil {
		return nil, errors.Wrap(err, errListPorts)
	}
	servers, err := b.o.Compute.ListServersByTag(ctx, identity(cluster))
	if err != nil {
		return nil, errors.Wrap(err, errListServers)
	}
	f := &found{ports: map[string]osclient.Port{}, servers: map[string][]osclient.Server{}, volumes: map[string][]osclient.Volume{}}
	if b.o.Volumes != nil {
		vs, err := b.o.Volumes.ListVolumesByMetadata(ctx, metaCluster, cluster)
		if err != nil {
			return nil, errors.Wrap(osclient.Explain(err), errListVolumes)
		}
		for _, v := range vs {
			f.volumes[v.Metadata[metaMember]] = append(f.volumes[v.Metadata[metaMember]], v)
		}
	}
	for _, p := range ports {
		name := strings.TrimPrefix(p.Name, portNamePrefix)
		// Two ports of one member: a create whose answer was lost, then retried. The oldest
		// is the member's; Delete removes both.
		if old, ok := f.ports[name]; !ok || p.CreatedAt.Before(old.CreatedAt) {
			f.ports[name] = p
		}
	}
	for _, s := range servers {
		name := s.Metadata[metaMember]
		if name == "" {
			name = s.Name
		}
		f.servers[name] = append(f.servers[name], s)
	}
	return f, nil
}

func (b *Backend) machine(cluster, name string, p *osclient.Port, servers []osclient.Server) machines.Machine {
	m := machines.Machine{Cluster: cluster, Name: name, State: machines.Allocated}
	if p != nil {
		m.CreatedAt = p.CreatedAt
		if len(p.FixedIPs) > 0 {
			m.Address = p.FixedIPs[0].IPAddress
			m.PeerURL, m.ClientURL = peerURL(m.Address), clientURL(m.Address)
		}
	}
	if len(servers) == 0 {
		if p == nil {
			m.State = machines.Stopped
		}
		return m
	}
	s := servers[0]
	m.Version = s.Metadata[metaVersion]
	if t, err := time.Parse(time.RFC3339, s.Metadata[metaCertNotAfter]); err == nil {
		m.CertNotAfter = t
	}
	m.Server = &machines.Server{ID: s.ID, Host: s.Host, Zone: s.Zone, Status: s.Status, Fault: s.FaultMessage()}
	if created, ok := b.serverCreated(s); ok {
		m.BootingUntil = created.Add(b.o.Spec.BootGrace)
	}
	switch s.Status {
	case "ACTIVE":
		m.State = machines.Running
	case "BUILD":
		m.State = machines.Running
		if created, ok := b.serverCreated(s); ok && b.o.Now().Sub(created) > b.o.Spec.BuildTimeout {
			m.State = machines.Stopped
			m.Server.Fault = "still building after " + b.o.Spec.BuildTimeout.String()
		}
	default:
		// SHUTOFF, ERROR, SUSPENDED, DELETED...: the member does not run; the planner
		// replaces it while quorum holds.
		m.State = machines.Stopped
	}
	if p == nil {
		// A server whose port was deleted by hand has no address: it is only good for
		// deleting.
		m.State = machines.Stopped
	}
	return m
}

// serverCreated is when the server was made (recorded by Start in its metadata).
func (b *Backend) serverCreated(s osclient.Server) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, s.Metadata[metaCreated])
	return t, err == nil
}

// List returns every machine of the cluster: one per port or server of the cluster.
func (b *Backend) List(ctx context.Context, cluster string) ([]machines.Machine, error) {
	f, err := b.find(ctx, cluster)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for n := range f.ports {
		names[n] = true
	}
	for n := range f.servers {
		names[n] = true
	}
	// A boot volume alone (its server and port gone, its own delete not finished or
	// failed) is a machine too, stopped: the planner deletes it, and Delete the volume.
	for n := range f.volumes {
		names[n] = true
	}
	out := make([]machines.Machine, 0, len(names))
	for n := range names {
		var p *osclient.Port
		if port, ok := f.ports[n]; ok {
			p = &port
		}
		out = append(out, b.machine(cluster, n, p, f.servers[n]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Allocate makes the member's port (with the cluster's security group), or finds it.
func (b *Backend) Allocate(ctx context.Context, cluster, name string) (machines.Machine, error) {
	f, err := b.find(ctx, cluster)
	if err != nil {
		return machines.Machine{}, err
	}
	if p, ok := f.ports[name]; ok {
		return b.machine(cluster, name, &p, f.servers[name]), nil
	}
	// A flavor or image that does not exist is found out before anything is made: the
	// member's server could never boot, and its port would only wait to be deleted.
	if _, err := b.o.Compute.FindFlavor(ctx, b.o.Spec.Flavor); err != nil {
		return machines.Machine{}, errors.Wrap(err, errFlavor)
	}
	if _, err := b.o.Images.FindImage(ctx, b.o.Spec.Image); err != nil {
		return machines.Machine{}, errors.Wrap(err, errImage)
	}
	if _, err := releaseFor(b.o.Spec.ReleaseURL, b.o.Spec.Version, b.o.Spec.Checksums); err != nil {
		return machines.Machine{}, err
	}
	sg, err := b.o.SecurityGroup(ctx)
	if err != nil {
		return machines.Machine{}, errors.Wrap(err, errSecurityGroup)
	}
	var netID, subnetID string
	if b.o.Spec.Subnet != "" {
		netID, subnetID, err = b.o.Networks.FindSubnet(ctx, b.o.Spec.Subnet)
	} else {
		netID, err = b.o.Networks.FindNetwork(ctx, b.o.Spec.Network)
	}
	if err != nil {
		return machines.Machine{}, errors.Wrap(err, errNetwork)
	}
	groups := append([]string{sg}, b.o.Spec.SecurityGroups...)
	p, err := b.o.Networks.CreatePort(ctx, osclient.PortSettings{
		Name: portName(name), Description: identity(cluster), NetworkID: netID, SubnetID: subnetID, SecurityGroups: groups,
	})
	if err != nil {
		return machines.Machine{}, errors.Wrap(osclient.Explain(err), errCreatePort)
	}
	if len(p.FixedIPs) == 0 {
		return machines.Machine{}, errors.New(errNoAddress)
	}
	if _, err := netip.ParseAddr(p.FixedIPs[0].IPAddress); err != nil {
		return machines.Machine{}, errors.Wrap(err, errNoAddress)
	}
	return b.machine(cluster, name, p, nil), nil
}

// Start boots the member's server on its port, once: a server that exists (in any state) is
// the member's, and a failed one is replaced by the planner, not restarted here.
//
// A restored member's server gets the snapshot's pre-signed URL and checksum; nothing boots
// before the provider has read the snapshot whole and found it good (Restore.Checked): a
// server cannot report a bad snapshot back, it would only fail to start.
func (b *Backend) Start(ctx context.Context, cluster, name string, cfg machines.MemberConfig) (machines.Machine, error) {
	if cfg.Restore != nil && cfg.Restore.AgeIdentity != "" {
		return machines.Machine{}, errors.New(errEncryptedRestore)
	}
	f, err := b.find(ctx, cluster)
	if err != nil {
		return machines.Machine{}, err
	}
	p, ok := f.ports[name]
	if !ok {
		return machines.Machine{}, errors.Errorf(errFmtNotAllocated, name)
	}
	if len(p.FixedIPs) == 0 {
		return machines.Machine{}, errors.New(errNoAddress)
	}
	// Waited for only when a server is to be made (a retried bootstrap whose servers exist
	// does not read the backup again), and outside placing, which the other members of
	// the bootstrap need meanwhile.
	if cfg.Restore != nil && cfg.Restore.Checked != nil && len(f.servers[name]) == 0 {
		if err := cfg.Restore.Checked(ctx); err != nil {
			return machines.Machine{}, err
		}
	}
	b.placing.Lock()
	defer b.placing.Unlock()
	for n, s := range b.started {
		if len(f.servers[n]) == 0 {
			f.servers[n] = []osclient.Server{s}
		}
	}
	if s := f.servers[name]; len(s) > 0 {
		return b.machine(cluster, name, &p, s), nil
	}
	release, err := releaseFor(b.o.Spec.ReleaseURL, strings.TrimPrefix(cfg.Version, "v"), b.o.Spec.Checksums)
	if err != nil {
		return machines.Machine{}, err
	}
	ud, err := userData(member{Name: name, Address: p.FixedIPs[0].IPAddress, EtcdPath: b.o.Spec.EtcdPath, Release: release, Config: cfg})
	if err != nil {
		return machines.Machine{}, err
	}
	flavor, err := b.o.Compute.FindFlavor(ctx, b.o.Spec.Flavor)
	if err != nil {
		return machines.Machine{}, errors.Wrap(err, errFlavor)
	}
	image, err := b.o.Images.FindImage(ctx, b.o.Spec.Image)
	if err != nil {
		return machines.Machine{}, errors.Wrap(err, errImage)
	}
	var bootVolume string
	if b.o.Spec.BootVolumeGiB > 0 {
		if bootVolume, err = b.bootVolume(ctx, cluster, name, image, f.volumes[name]); err != nil {
			return machines.Machine{}, err
		}
	}
	group, err := b.serverGroup(ctx, cluster)
	if err != nil {
		return machines.Machine{}, err
	}
	zone := zoneFor(b.o.Spec.AvailabilityZones, f.servers)
	metadata := map[string]string{
		metaMember: name, metaVersion: strings.TrimPrefix(cfg.Version, "v"),
		metaCertNotAfter: cfg.CertNotAfter.UTC().Format(time.RFC3339),
		metaCreated:      b.o.Now().UTC().Format(time.RFC3339),
	}
	if zone != "" {
		metadata[metaZone] = zone
	}
	s, err := b.o.Compute.CreateServer(ctx, osclient.ServerSettings{
		Name: name, FlavorID: flavor.ID, ImageID: image, BootVolumeID: bootVolume, Zone: zone,
		KeyPair: b.o.Spec.KeyPair, PortID: p.ID, ServerGroupID: group, UserData: ud,
		Tags: []string{identity(cluster)}, Metadata: metadata,
	})
	if err != nil {
		// Nova's own words: "Quota exceeded for instances: Requested 1, but already used 10
		// of 10 instances".
		return machines.Machine{}, errors.Wrap(osclient.Explain(err), errCreateServer)
	}
	s.Metadata = metadata
	b.started[name] = *s
	return b.machine(cluster, name, &p, []osclient.Server{*s}), nil
}

// bootVolume returns the member's boot volume once Cinder has made it, making it first if it
// does not exist. It waits a little for a volume being made; one that is still not ready is
// an error, and the next Start finds it. A volume Cinder failed to make is deleted, so that
// the next Start makes it again.
func (b *Backend) bootVolume(ctx context.Context, cluster, name, image string, have []osclient.Volume) (string, error) {
	if len(have) == 0 {
		v, err := b.o.Volumes.CreateVolume(ctx, osclient.VolumeSettings{
			Name: portName(name), Description: identity(cluster), ImageID: image, SizeGiB: b.o.Spec.BootVolumeGiB,
			Metadata: map[string]string{metaCluster: cluster, metaMember: name},
		})
		if err != nil {
			// Cinder's own words: "VolumeSizeExceedsAvailableQuota: Requested volume or
			// snapshot exceeds allowed gigabytes quota".
			return "", errors.Wrap(osclient.Explain(err), errCreateVolume)
		}
		have = []osclient.Volume{*v}
	}
	v := have[0]
	for deadline := b.o.Now().Add(volumeWait); ; {
		switch v.Status {
		case "available":
			return v.ID, nil
		case "error":
			if err := b.o.Volumes.DeleteVolume(ctx, v.ID); err != nil {
				return "", errors.Wrap(osclient.Explain(err), errDeleteVolume)
			}
			return "", errors.Errorf(errFmtVolumeFailed, name, v.Status)
		case "creating", "downloading":
		default:
			// in-use, deleting, ...: not a volume a new server can boot from now.
			return "", errors.Errorf(errFmtVolumeBusy, name, v.Status)
		}
		if b.o.Now().After(deadline) {
			return "", errors.Errorf(errFmtVolumeBusy, name, v.Status)
		}
		if err := b.o.Sleep(ctx, time.Second); err != nil {
			return "", err
		}
		vs, err := b.o.Volumes.ListVolumesByMetadata(ctx, metaCluster, cluster)
		if err != nil {
			return "", errors.Wrap(osclient.Explain(err), errListVolumes)
		}
		i := slices.IndexFunc(vs, func(x osclient.Volume) bool { return x.ID == v.ID })
		if i < 0 {
			return "", errors.Errorf(errFmtVolumeBusy, name, "gone")
		}
		v = vs[i]
	}
}

// CheckCapacity tells whether n more servers of the cluster's flavor fit the project's
// compute quota (instances, cores, RAM), as Nova counts it now. It is a check, not a
// reservation: a server made meanwhile by someone else can still take the room, and the
// create then fails with Nova's own quota message.
func (b *Backend) CheckCapacity(ctx context.Context, n int) error {
	flavor, err := b.o.Compute.FindFlavor(ctx, b.o.Spec.Flavor)
	if err != nil {
		return errors.Wrap(err, errFlavor)
	}
	l, err := b.o.Compute.Limits(ctx)
	if err != nil {
		return errors.Wrap(osclient.Explain(err), errLimits)
	}
	for _, q := range []struct {
		what, unit      string
		max, used, each int
	}{
		{"instances", "server", l.MaxInstances, l.UsedInstances, 1},
		{"cores", "vCPUs", l.MaxCores, l.UsedCores, flavor.VCPUs},
		{"RAM (MiB)", "MiB", l.MaxRAM, l.UsedRAM, flavor.RAM},
	} {
		if q.max >= 0 && q.used+n*q.each > q.max {
			return errors.Errorf(errFmtQuota, q.what, n, b.o.Spec.Flavor, q.each, q.unit, q.used, q.max)
		}
	}
	return nil
}

// zoneFor picks the zone with the fewest of the cluster's servers (the first listed on a
// tie); no zones: Nova's default. A server counts in the zone it was asked for, which Nova
// shows before it shows where it runs.
func zoneFor(zones []string, servers map[string][]osclient.Server) string {
	if len(zones) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, ss := range servers {
		for _, s := range ss {
			z := s.Metadata[metaZone]
			if z == "" {
				z = s.Zone
			}
			count[z]++
		}
	}
	best := zones[0]
	for _, z := range zones[1:] {
		if count[z] < count[best] {
			best = z
		}
	}
	return best
}

// serverGroup finds or makes the cluster's server group. Two groups of the cluster's name (a
// create whose answer was lost, then retried) are not an error: the one with the lowest ID is
// the cluster's, and Delete removes both.
func (b *Backend) serverGroup(ctx context.Context, cluster string) (string, error) {
	gs, err := b.o.Compute.ListServerGroups(ctx, serverGroupName(cluster))
	if err != nil {
		return "", errors.Wrap(err, errServerGroup)
	}
	if len(gs) > 0 {
		return slices.MinFunc(gs, func(a, b osclient.ServerGroup) int { return strings.Compare(a.ID, b.ID) }).ID, nil
	}
	policy := b.o.Spec.ServerGroupPolicy
	if policy == "" {
		policy = "soft-anti-affinity"
	}
	g, err := b.o.Compute.CreateServerGroup(ctx, serverGroupName(cluster), policy)
	if err != nil {
		return "", errors.Wrap(err, errServerGroup)
	}
	return g.ID, nil
}

// Delete deletes the member's servers, then (once Nova has) its ports; the cluster's server
// group goes with its last machine.
func (b *Backend) Delete(ctx context.Context, cluster, name string) error {
	ports, err := b.o.Networks.ListPortsByDescription(ctx, identity(cluster))
	if err != nil {
		return errors.Wrap(err, errListPorts)
	}
	f, err := b.find(ctx, cluster)
	if err != nil {
		return err
	}
	for _, s := range f.servers[name] {
		if err := b.o.Compute.DeleteServer(ctx, s.ID); err != nil && !osclient.IsNotFound(err) {
			return errors.Wrap(err, errDeleteServer)
		}
	}
	for deadline := b.o.Now().Add(deleteWait); len(f.servers[name]) > 0; {
		if b.o.Now().After(deadline) {
			return errors.Errorf(errFmtStillDeleting, name)
		}
		if err := b.o.Sleep(ctx, time.Second); err != nil {
			return err
		}
		if f, err = b.find(ctx, cluster); err != nil {
			return err
		}
	}
	// Nova deletes a boot volume with its server (delete_on_termination); one left over
	// (a server that never took it, a delete Nova could not finish) is deleted here.
	for _, v := range f.volumes[name] {
		switch v.Status {
		case "deleting":
			continue
		case "available", "error", "error_restoring", "error_extending", "error_managing":
			if err := b.o.Volumes.DeleteVolume(ctx, v.ID); err != nil {
				return errors.Wrap(osclient.Explain(err), errDeleteVolume)
			}
		default:
			// creating, in-use, detaching...: Cinder refuses to delete it now; the next
			// Delete does (List shows the machine until then).
			return errors.Errorf(errFmtVolumeInUse, name, v.Status)
		}
	}
	for _, p := range ports {
		if strings.TrimPrefix(p.Name, portNamePrefix) != name {
			continue
		}
		if err := b.o.Networks.DeletePort(ctx, p.ID); err != nil && !osclient.IsNotFound(err) {
			return errors.Wrap(err, errDeletePort)
		}
	}
	remaining := slices.DeleteFunc(slices.Clone(ports), func(p osclient.Port) bool { return strings.TrimPrefix(p.Name, portNamePrefix) == name })
	if len(remaining) > 0 || len(f.servers) > 0 {
		return nil
	}
	gs, err := b.o.Compute.ListServerGroups(ctx, serverGroupName(cluster))
	if err != nil {
		return errors.Wrap(err, errServerGroup)
	}
	for _, g := range gs {
		if err := b.o.Compute.DeleteServerGroup(ctx, g.ID); err != nil && !osclient.IsNotFound(err) {
			return errors.Wrap(err, errDeleteSrvGroup)
		}
	}
	return nil
}
