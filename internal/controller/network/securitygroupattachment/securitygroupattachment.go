// Package securitygroupattachment attaches Neutron security groups to the servers behind the
// Kubernetes nodes a label selector picks.
package securitygroupattachment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	apisv1alpha1 "github.com/stackservices/provider-stackservices/apis/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
	"github.com/stackservices/provider-stackservices/internal/controller/tenancy"
)

const (
	errConnect          = "cannot connect to OpenStack"
	errNoSecurityGroup  = "spec.forProvider.securityGroupID is not set (is the referenced SecurityGroup Ready?)"
	errNodeSelector     = "cannot use spec.forProvider.nodeSelector"
	errListNodes        = "cannot list the selected nodes"
	errListPorts        = "cannot list the ports of the servers"
	errFmtChangePorts   = "cannot change the security groups of %d port(s): %s"
	errFmtPortMoved     = "port %s moved from server %s to %q since it was read; it is planned again at the next reconcile"
	errFmtServerErrors  = "%d server(s) cannot get the security group: %s"
	errFmtUnmatched     = "%d selected node(s) map to no server: %s"
	maxRetriesOnChange  = 5
	maxServersInEvents  = 10
	errGetGroup         = "cannot get the security group to attach"
	errListGroups       = "cannot list the SecurityGroups of the namespace"
	errFmtNotOurGroup   = "security group %s was not made by a SecurityGroup of namespace %s, so it is not attached: an attachment through a ClusterProviderConfig attaches only its own namespace's groups"
	reasonAttached      = event.Reason("AttachedSecurityGroup")
	reasonReattached    = event.Reason("ReattachedSecurityGroup")
	reasonDetached      = event.Reason("DetachedSecurityGroup")
	reasonNotAttachable = event.Reason("CannotAttachSecurityGroup")
)

// Kind is the managed resource kind this package reconciles.
var Kind = managedcontroller.Kind{
	GroupVersionKind: v1alpha1.SecurityGroupAttachmentGroupVersionKind,
	Object:           &v1alpha1.SecurityGroupAttachment{},
	List:             &v1alpha1.SecurityGroupAttachmentList{},
}

// Setup adds a controller that reconciles SecurityGroupAttachments. Besides polling, it
// watches the local cluster's Nodes so that a label change reaches Neutron at once, when the
// provider may watch Nodes; without that permission it polls, and says so in its log.
func Setup(mgr ctrl.Manager, o managedcontroller.Options) error {
	// Drift the session's listing of ports finds (a group removed by hand) reconciles the
	// attachments of those servers at once, not at their next poll.
	drift := managedcontroller.NewDrift()
	var (
		watches = []managedcontroller.Watch{drift.Watch()}
		nodes   = mgr.GetAPIReader()
	)
	if canWatchNodes(context.Background(), mgr.GetConfig()) {
		watches = append(watches, managedcontroller.Watch{Object: &corev1.Node{}, Handler: enqueueForNode(mgr.GetClient())})
		nodes = mgr.GetClient()
	} else {
		o.Logger.Info("Cannot watch Nodes: SecurityGroupAttachments follow node changes at the next poll only. Grant the provider's service account get, list and watch on nodes.")
	}
	return managedcontroller.SetupWithWatches(mgr, o, Kind, watches,
		managedcontroller.WithExternalConnector[*v1alpha1.SecurityGroupAttachment](&connector{
			openstack: o.OpenStack,
			local:     nodes,
			remote:    newRemoteClusters(mgr.GetClient()),
			tenancy:   tenancy.NewChecker(mgr.GetClient()),
			kube:      mgr.GetClient(),
			record:    managedcontroller.Recorder(mgr, Kind),
			// Half a poll, as for SecurityGroups: two lists of the project's ports a poll,
			// whatever the number of attachments and servers.
			listingAge: o.PollInterval / 2,
			drift:      drift,
		}),
		// Attaching is port updates Neutron applies at once; nothing to wait for.
		managed.WithCreationGracePeriod(0),
	)
}

// SetupGated sets the controller up once the SecurityGroupAttachment CRD is established.
func SetupGated(mgr ctrl.Manager, o managedcontroller.Options) error {
	return managedcontroller.Gated(mgr, o, func() error { return Setup(mgr, o) }, Kind.GroupVersionKind)
}

type connector struct {
	openstack openstack.SessionConnector
	local     client.Reader
	remote    *remoteClusters
	tenancy   *tenancy.Checker
	kube      client.Reader
	record    event.Recorder
	// listingAge is how old the session's listing of ports may be when an attachment is
	// observed from it; zero, every observation lists its servers' ports.
	listingAge time.Duration
	// drift reconciles the attachments whose servers' ports the listing saw change.
	drift *managedcontroller.Drift
}

func (c *connector) Connect(ctx context.Context, cr *v1alpha1.SecurityGroupAttachment) (managed.TypedExternalClient[*v1alpha1.SecurityGroupAttachment], error) {
	s, err := c.openstack.Connect(ctx, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	nodes := c.local
	switch p := cr.Spec.ForProvider; {
	case p.KubeconfigSecretRef != nil:
		if nodes, err = c.remote.reader(ctx, cr.GetNamespace(), *p.KubeconfigSecretRef); err != nil {
			return nil, err
		}
	case p.NodeSelector != nil:
		if _, err := metav1.LabelSelectorAsSelector(p.NodeSelector); err != nil {
			return nil, errors.Wrap(err, errNodeSelector)
		}
		// The provider's own cluster's Nodes are the platform's: a namespace selects them
		// only when a ClusterProviderConfig allows it.
		if err := c.tenancy.Check(ctx, cr, tenancy.HostNodes); err != nil {
			if !meta.WasDeleted(cr) {
				return nil, err
			}
			// Being deleted: detach from the servers recorded, and select no node.
			nodes = nil
		}
	}
	if err := c.mayAttach(ctx, cr, s.SecurityGroups()); err != nil {
		return nil, err
	}
	e := &external{ports: s.Ports(), nodes: nodes, record: c.record}
	if c.listingAge > 0 {
		e.listing = s.PortListing(c.listingAge)
		e.watcher, e.drifted = c.drift.For(cr)
	}
	return e, nil
}

// portListing serves the ports of servers from one list of the project's ports.
type portListing interface {
	PortsOfDevices(ctx context.Context, deviceIDs []string) ([]openstack.Port, error)
	Wrote(deviceID string)
	Watch(watcher string, deviceIDs []string, notify func())
	Forget(watcher string)
}

// mayAttach refuses what would reach beyond the namespace through the platform's credentials
// (a ClusterProviderConfig, whose project holds every tenant's servers and groups): servers
// named by ID without the platform's consent, and a group no SecurityGroup of this namespace
// made. A group is access: attaching another's group to a server makes it a member of
// whatever trusts that group's members. Detaching, when deleted, is always allowed.
func (c *connector) mayAttach(ctx context.Context, cr *v1alpha1.SecurityGroupAttachment, groups openstack.SecurityGroups) error {
	ref := cr.GetProviderConfigReference()
	if meta.WasDeleted(cr) || ref == nil || ref.Kind != apisv1alpha1.ClusterProviderConfigKind {
		return nil
	}
	// Servers named by ID, or through the Nodes of a workload cluster: the tenant writes
	// those Nodes' provider IDs as freely as serverIDs.
	if len(cr.Spec.ForProvider.ServerIDs) > 0 || cr.Spec.ForProvider.KubeconfigSecretRef != nil {
		if err := c.tenancy.Check(ctx, cr, tenancy.Servers); err != nil {
			return err
		}
	}
	id := ptr.Deref(cr.Spec.ForProvider.SecurityGroupID, "")
	if id == "" || id == cr.Status.AtProvider.SecurityGroupID {
		// Nothing to attach yet, or the group was checked when it was first attached.
		return nil
	}
	sg, err := groups.GetSecurityGroup(ctx, id)
	if err != nil {
		return errors.Wrap(err, errGetGroup)
	}
	l := &v1alpha1.SecurityGroupList{}
	if err := c.kube.List(ctx, l, client.InNamespace(cr.GetNamespace())); err != nil {
		return errors.Wrap(err, errListGroups)
	}
	for _, g := range l.Items {
		if slices.Contains(sg.Tags, v1alpha1.IdentityTagPrefix+string(g.GetUID())) {
			return nil
		}
	}
	return errors.Errorf(errFmtNotOurGroup, id, cr.GetNamespace())
}

// external reconciles one attachment. It lives for one reconcile, so Update reuses what
// Observe read instead of reading Neutron again.
type external struct {
	ports openstack.Ports
	// nodes lists the Nodes the selector picks from; nil selects none.
	nodes  client.Reader
	record event.Recorder
	// listing, when set, serves the ports Observe reads; apply tells it the servers whose
	// ports it wrote.
	listing portListing
	// watcher names this attachment to the listing, and drifted reconciles it when a list
	// shows the ports of its servers changed.
	watcher string
	drifted func()

	observed *observation
}

// serversOf are the servers whose ports the observation reads.
func serversOf(o *observation) []string {
	ids := map[string]bool{}
	for id := range o.want {
		ids[id] = true
	}
	for _, r := range o.recorded {
		ids[r.ServerID] = true
	}
	return sortedKeys(ids)
}

// watch asks the listing to tell of changes of the servers' ports; none: to stop.
func (e *external) watch(servers []string) {
	if e.listing == nil || e.drifted == nil {
		return
	}
	if len(servers) == 0 {
		e.listing.Forget(e.watcher)
		return
	}
	e.listing.Watch(e.watcher, servers, e.drifted)
}

// portsOf reads the ports of the servers: from the listing when there is one.
func (e *external) portsOf(ctx context.Context, servers []string) ([]openstack.Port, error) {
	if e.listing != nil {
		return e.listing.PortsOfDevices(ctx, servers)
	}
	return e.ports.ListPortsOfDevices(ctx, servers)
}

// observation is what Observe read: the plan and the ports it was made from.
type observation struct {
	sg, previous string
	want         map[string]string
	recorded     []v1alpha1.AttachedServer
	// servers are those whose ports were read: wanted or recorded.
	servers []string
	ports   []openstack.Port
	plan    plan
}

func (e *external) observe(ctx context.Context, cr *v1alpha1.SecurityGroupAttachment) (*observation, []v1alpha1.UnmatchedNode, error) {
	sg := ptr.Deref(cr.Spec.ForProvider.SecurityGroupID, "")
	if sg == "" {
		return nil, nil, errors.New(errNoSecurityGroup)
	}
	o := &observation{sg: sg, previous: cr.Status.AtProvider.SecurityGroupID, recorded: cr.Status.AtProvider.Servers}
	nodes, err := e.selectedNodes(ctx, cr.Spec.ForProvider.NodeSelector)
	if err != nil {
		return nil, nil, err
	}
	t := resolveTargets(nodes, cr.Spec.ForProvider.ServerIDs)
	o.want = t.servers
	if meta.WasDeleted(cr) {
		// Detach from every server recorded, and every server that matches now (the status
		// may be older than the last attach): all of them are unwanted now.
		seen := map[string]bool{}
		for _, r := range o.recorded {
			seen[r.ServerID] = true
		}
		for _, id := range sortedKeys(o.want) {
			if !seen[id] {
				o.recorded = append(o.recorded, v1alpha1.AttachedServer{ServerID: id, NodeName: o.want[id]})
			}
		}
		o.want = map[string]string{}
	}
	o.servers = serversOf(o)
	if len(o.servers) > 0 {
		ports, err := e.portsOf(ctx, o.servers)
		if err != nil {
			return nil, nil, errors.Wrap(err, errListPorts)
		}
		o.ports = ports
	}
	o.plan = makePlan(o.sg, o.previous, o.want, o.recorded, o.ports)
	return o, t.unmatched, nil
}

func (e *external) selectedNodes(ctx context.Context, s *metav1.LabelSelector) ([]corev1.Node, error) {
	if s == nil || e.nodes == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, errors.Wrap(err, errNodeSelector)
	}
	l := &corev1.NodeList{}
	if err := e.nodes.List(ctx, l, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, errors.Wrap(err, errListNodes)
	}
	return l.Items, nil
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.SecurityGroupAttachment) (managed.ExternalObservation, error) {
	o, unmatched, err := e.observe(ctx, cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	e.observed = o

	if meta.WasDeleted(cr) {
		// Being detached (or let go): no drift of its servers matters any more.
		e.watch(nil)
		// Deleted once the group is off every server it was attached to.
		return managed.ExternalObservation{ResourceExists: stillAttached(o.ports, o.sg, o.previous)}, nil
	}
	e.watch(o.servers)

	// The attachment exists once Create ran, or once a server carries the group as status
	// recorded it (a create whose annotation was lost). Servers status lists as merely
	// planned do not count: Observe records them itself, and an attachment whose management
	// policies leave out Create must stay absent.
	exists := !meta.GetExternalCreateSucceeded(cr).IsZero() || slices.ContainsFunc(o.recorded, func(s v1alpha1.AttachedServer) bool {
		return s.State == v1alpha1.ServerAttached
	})
	cr.Status.AtProvider.Servers = o.plan.servers
	cr.Status.AtProvider.UnmatchedNodes = unmatched
	if o.plan.upToDate() || cr.Status.AtProvider.SecurityGroupID == "" {
		cr.Status.AtProvider.SecurityGroupID = o.sg
	}
	cr.SetConditions(readiness(o.plan, unmatched))
	return managed.ExternalObservation{ResourceExists: exists, ResourceUpToDate: o.plan.upToDate()}, nil
}

// readiness is Ready=True only when every targeted server has the group on all its ports and
// every selected node maps to a server.
func readiness(p plan, unmatched []v1alpha1.UnmatchedNode) xpv2.Condition {
	var why []string
	if errs := p.errors(); len(errs) > 0 {
		why = append(why, fmt.Sprintf(errFmtServerErrors, len(errs), describeServers(errs)))
	}
	if len(unmatched) > 0 {
		parts := make([]string, 0, len(unmatched))
		for _, u := range unmatched {
			parts = append(parts, u.NodeName+" ("+u.Reason+")")
		}
		why = append(why, fmt.Sprintf(errFmtUnmatched, len(unmatched), strings.Join(parts, "; ")))
	}
	if !p.upToDate() {
		why = append(why, "attaching or detaching the group")
	}
	if len(why) == 0 {
		return xpv2.Available()
	}
	return xpv2.Unavailable().WithMessage(strings.Join(why, "; "))
}

func describeServers(s []v1alpha1.AttachedServer) string {
	parts := make([]string, 0, len(s))
	for _, x := range s {
		name := x.ServerID
		if x.NodeName != "" {
			name += " (node " + x.NodeName + ")"
		}
		parts = append(parts, name+": "+x.Reason)
	}
	return strings.Join(parts, "; ")
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.SecurityGroupAttachment) (managed.ExternalCreation, error) {
	_, err := e.sync(ctx, cr)
	return managed.ExternalCreation{}, err
}

func (e *external) Update(ctx context.Context, cr *v1alpha1.SecurityGroupAttachment) (managed.ExternalUpdate, error) {
	o, err := e.sync(ctx, cr)
	if o != nil {
		cr.Status.AtProvider.Servers = o.plan.servers
		if o.plan.upToDate() {
			cr.Status.AtProvider.SecurityGroupID = o.sg
		}
	}
	return managed.ExternalUpdate{}, err
}

// sync makes the changes of the observed plan and returns the observation updated with what
// Neutron now holds.
func (e *external) sync(ctx context.Context, cr *v1alpha1.SecurityGroupAttachment) (*observation, error) {
	o := e.observed
	if o == nil {
		var err error
		if o, _, err = e.observe(ctx, cr); err != nil {
			return nil, err
		}
	}
	err := e.apply(ctx, cr, o, "it is no longer selected")
	o.plan = makePlan(o.sg, o.previous, o.want, o.recorded, o.ports)
	if errs := o.plan.errors(); len(errs) > 0 {
		e.record.Event(cr, event.Warning(reasonNotAttachable, errors.Errorf(errFmtServerErrors, len(errs), describeServers(errs))))
	}
	return o, err
}

func (e *external) Delete(ctx context.Context, cr *v1alpha1.SecurityGroupAttachment) (managed.ExternalDelete, error) {
	o := e.observed
	if o == nil {
		var err error
		if o, _, err = e.observe(ctx, cr); err != nil {
			return managed.ExternalDelete{}, err
		}
	}
	return managed.ExternalDelete{}, e.apply(ctx, cr, o, "the attachment is being deleted")
}

func (e *external) Disconnect(_ context.Context) error { return nil }

// apply makes each port change, retrying with the port's new revision when another writer
// changed the port in between, and records in o.ports what Neutron now holds. It reports what
// it did as one Event per kind of change (attached, re-attached, detached): an Event per
// server would be dropped by the event recorder's spam filter past about 25 for one object.
func (e *external) apply(ctx context.Context, cr *v1alpha1.SecurityGroupAttachment, o *observation, detachReason string) error {
	byServer := map[string][]portChange{}
	var order []string
	for _, c := range o.plan.changes {
		if _, ok := byServer[c.serverID]; !ok {
			order = append(order, c.serverID)
		}
		byServer[c.serverID] = append(byServer[c.serverID], c)
	}
	var (
		failed []string
		done   = map[changeKind][]string{}
	)
	for _, id := range order {
		var changed []string
		for _, c := range byServer[id] {
			writes := c.needed(c.port.SecurityGroups)
			p, err := e.change(ctx, c)
			if writes && e.listing != nil {
				// Whatever the outcome: the listing no longer tells what the port holds.
				e.listing.Wrote(id)
			}
			if err != nil {
				failed = append(failed, fmt.Sprintf("port %s of server %s: %s", c.port.ID, id, openstack.Describe(err)))
				continue
			}
			changed = append(changed, c.port.ID)
			for i := range o.ports {
				if o.ports[i].ID == p.ID {
					o.ports[i] = *p
				}
			}
		}
		if len(changed) > 0 {
			c := byServer[id][0]
			done[kindOf(c)] = append(done[kindOf(c)], describeChange(c, changed))
		}
	}
	for _, k := range []changeKind{attached, reattached, detached} {
		if len(done[k]) > 0 {
			e.record.Event(cr, summaryEvent(k, o, done[k], detachReason))
		}
	}
	if len(failed) > 0 {
		return errors.Errorf(errFmtChangePorts, len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// change makes one port change with Neutron's revision check (If-Match): when the port moved
// on, it is read again and the change re-applied to what it holds now.
func (e *external) change(ctx context.Context, c portChange) (*openstack.Port, error) {
	p := c.port
	for attempt := 0; ; attempt++ {
		if !c.needed(p.SecurityGroups) {
			return &p, nil
		}
		updated, err := e.ports.SetPortSecurityGroups(ctx, p.ID, c.apply(p.SecurityGroups), p.RevisionNumber)
		if err == nil {
			return updated, nil
		}
		if !openstack.IsPreconditionFailed(err) || attempt == maxRetriesOnChange {
			return nil, err
		}
		fresh, gerr := e.ports.GetPort(ctx, p.ID)
		if gerr != nil {
			return nil, gerr
		}
		if fresh.DeviceID != p.DeviceID {
			// The port moved to another server since it was read (the session's list
			// may be half a poll old): what the plan decided is not for that server.
			return nil, errors.Errorf(errFmtPortMoved, p.ID, p.DeviceID, fresh.DeviceID)
		}
		p = *fresh
	}
}

type changeKind int

const (
	attached changeKind = iota
	reattached
	detached
)

func kindOf(c portChange) changeKind {
	switch {
	case c.attach != "" && c.reattach:
		return reattached
	case c.attach != "":
		return attached
	default:
		return detached
	}
}

// describeChange names a server (and its node) and the ports changed on it.
func describeChange(c portChange, ports []string) string {
	on := "server " + c.serverID
	if c.nodeName != "" {
		on += " (node " + c.nodeName + ")"
	}
	return on + " port(s) " + strings.Join(ports, ", ")
}

// summaryEvent is the Event for every server a reconcile changed one way, naming the first
// maxServersInEvents of them.
func summaryEvent(k changeKind, o *observation, servers []string, detachReason string) event.Event {
	list := servers
	more := ""
	if len(list) > maxServersInEvents {
		list, more = list[:maxServersInEvents], fmt.Sprintf(" and %d more", len(servers)-maxServersInEvents)
	}
	names := strings.Join(list, "; ") + more
	switch k {
	case reattached:
		return event.Normal(reasonReattached, fmt.Sprintf("Re-attached security group %s to %d server(s) where it had been removed: %s", o.sg, len(servers), names))
	case attached:
		return event.Normal(reasonAttached, fmt.Sprintf("Attached security group %s to %d server(s): %s", o.sg, len(servers), names))
	default:
		return event.Normal(reasonDetached, fmt.Sprintf("Detached security group from %d server(s) (%s): %s", len(servers), detachReason, names))
	}
}
