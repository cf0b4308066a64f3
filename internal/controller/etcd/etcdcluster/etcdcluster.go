// Package etcdcluster reconciles EtcdClusters: etcd clusters the provider runs on machines,
// with TLS everywhere, scaled, upgraded, renewed and healed one safe step at a time.
//
// Each reconcile observes the cluster (membership, every member's status, every machine),
// asks the planner in internal/etcd for the next step, and executes it; Update repeats that
// loop for a bounded time so that a scale or upgrade does not wait a poll interval per step.
package etcdcluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/common"
	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/internal/controller/etcd/authority"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
	"github.com/stackservices/provider-stackservices/internal/etcd"
	"github.com/stackservices/provider-stackservices/internal/machines"
	osmachines "github.com/stackservices/provider-stackservices/internal/machines/openstack"
	"github.com/stackservices/provider-stackservices/internal/transfers"
)

const (
	errLocalDisabled = "spec.forProvider.machines.type is Local, but this provider runs without local machines " +
		"(they are for development and tests: start the provider with --enable-local-machines)"
	errFmtMachineType = "machines of type %q are not supported by this provider version"
	errNoMachines     = "spec.forProvider.machines is not set, and the ProviderConfig gives no etcdMachines: " +
		"name the machines, or ask the platform team to set etcdMachines in the ProviderConfig"
	errConfigMachines = "cannot read the machines the ProviderConfig gives"
	errListMachines   = "cannot list the cluster's machines"
	errVersion        = "cannot use spec.forProvider.version"
	errMachinesGone   = "every machine of this cluster is gone, and its data with it; delete this EtcdCluster and restore a backup into a new one"
	errNoCA           = "the cluster's CA Secret is gone: without it the provider cannot reach the cluster; restore the Secret"
	errConnectCluster = "cannot connect to the cluster"
	errMembers        = "cannot read the cluster's membership from any member"
	errBootstrap      = "cannot bootstrap the cluster"
	errDeleteMachine  = "cannot delete a machine"
	errAddBackups     = "cannot add the backup runner to the manager"

	// convergingPoll is how soon a cluster that is changing is looked at again: a learner
	// catching up or an election takes seconds, not a poll interval.
	convergingPoll = 5 * time.Second
	// reconcileTimeout bounds a reconcile: a bootstrap from a backup downloads and restores it
	// on every member first, which takes longer than crossplane-runtime's default minute for
	// large databases.
	reconcileTimeout = 5 * time.Minute
	// updateBudget bounds one Update's loop of steps (the reconcile has a minute in all).
	updateBudget = 30 * time.Second
	// statusTimeout bounds the status request to each member: a member that does not answer
	// in time is unhealthy.
	statusTimeout = 2 * time.Second

	defaultCertValidity    = 365 * 24 * time.Hour
	defaultRenewBefore     = 30 * 24 * time.Hour
	defaultReplaceUnhealty = 2 * time.Minute
)

// Kind is the managed resource kind this package reconciles.
var Kind = managedcontroller.Kind{
	GroupVersionKind: v1alpha1.EtcdClusterGroupVersionKind,
	Object:           &v1alpha1.EtcdCluster{},
	List:             &v1alpha1.EtcdClusterList{},
}

// Setup adds a controller that reconciles EtcdClusters.
func Setup(mgr ctrl.Manager, o managedcontroller.Options) error {
	steady := managedcontroller.PollHook(o.PollJitter)
	newObjects := func(c s3.Config) (s3.Objects, error) {
		if o.WrapTransport != nil {
			return s3.New(c, s3.WithTransportWrapper(o.WrapTransport))
		}
		return s3.New(c)
	}
	b := newBackups(DefaultBackupSlots, newObjects, etcdclient.New)
	if err := mgr.Add(b); err != nil {
		return errors.Wrap(err, errAddBackups)
	}
	return managedcontroller.Setup(mgr, o, Kind,
		managedcontroller.WithExternalConnector[*v1alpha1.EtcdCluster](&connector{
			kube:             mgr.GetClient(),
			local:            o.LocalMachines,
			openstack:        o.OpenStack,
			providerCIDRs:    o.EtcdProviderCIDRs,
			releaseChecksums: o.EtcdReleaseChecksums,
			newCluster:       etcdclient.New,
			connections:      newConnections(etcdclient.New),
			record:           managedcontroller.Recorder(mgr, Kind),
			backups:          b,
			newObjects:       newObjects,
			transfers:        o.ReconcileTransfers(),
		}),
		// A bootstrap from a backup streams the backup to each member first.
		managed.WithTimeout(reconcileTimeout),
		// The cluster ID is etcd's to give, at bootstrap.
		managed.WithInitializers(),
		managed.WithCreationGracePeriod(0),
		managed.WithPollIntervalHook(func(mg resource.Managed, poll time.Duration) time.Duration {
			cr, ok := mg.(*v1alpha1.EtcdCluster)
			if !ok {
				return steady(mg, poll)
			}
			if converging(cr) || b.isRunning(cr.GetUID()) {
				return min(poll, convergingPoll)
			}
			return min(steady(mg, poll), untilNextBackup(cr, time.Now()))
		}),
	)
}

// SetupGated sets the controller up once the EtcdCluster CRD is established.
func SetupGated(mgr ctrl.Manager, o managedcontroller.Options) error {
	return managedcontroller.Gated(mgr, o, func() error { return Setup(mgr, o) }, Kind.GroupVersionKind)
}

// untilNextBackup is how long until the cluster's next backup is due, so that it starts on
// time rather than at the next poll.
func untilNextBackup(cr *v1alpha1.EtcdCluster, now time.Time) time.Duration {
	b := cr.Status.AtProvider.Backup
	if cr.Spec.ForProvider.Backup == nil || b == nil || b.NextScheduledTime == nil {
		return time.Duration(math.MaxInt64)
	}
	return max(b.NextScheduledTime.Sub(now), time.Second)
}

// converging clusters are changing by themselves or by the provider's hand.
func converging(cr *v1alpha1.EtcdCluster) bool {
	switch cr.Status.AtProvider.Phase {
	case v1alpha1.PhaseRunning, v1alpha1.PhasePaused, v1alpha1.PhaseBlocked, v1alpha1.PhaseQuorumLost:
		return false
	}
	return true
}

// clusterFactory connects to a cluster's members.
type clusterFactory func(ctx context.Context, endpoints []string, cfg *tls.Config) (etcdclient.Cluster, error)

type connector struct {
	kube  client.Client
	local machines.Machines
	// openstack connects clusters with OpenStack machines to their ProviderConfig's cloud.
	openstack openstack.SessionConnector
	// providerCIDRs are where the provider reaches members from (--etcd-provider-cidr);
	// empty, OpenStack machines are refused.
	providerCIDRs []string
	// releaseChecksums vouch for the etcd releases servers download (--etcd-release-checksums).
	releaseChecksums osmachines.Checksums
	newCluster       clusterFactory
	connections      *connections
	record           event.Recorder
	backups          *backups
	newObjects       func(s3.Config) (s3.Objects, error)
	transfers        *transfers.Limiter
}

func (c *connector) Connect(ctx context.Context, cr *v1alpha1.EtcdCluster) (managed.TypedExternalClient[*v1alpha1.EtcdCluster], error) {
	if cr.Spec.ForProvider.Machines == nil {
		if meta.WasDeleted(cr) {
			// Deleted before it ever had machines: nothing was made (see below), and its
			// ProviderConfig, which may be gone too, need not be read.
			return &external{kube: c.kube, machines: unplaced{}, record: c.record, now: time.Now, sleep: machines.Sleep}, nil
		}
		// The ProviderConfig's machines, set in the spec here: crossplane-runtime writes the
		// spec (with its create-pending annotation) before Create makes anything, so the
		// cluster records what it was made on before the first member exists.
		m, err := c.configuredMachines(ctx, cr)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, errors.New(errNoMachines)
		}
		cr.Spec.ForProvider.Machines = m
	}
	var backend machines.Machines
	switch t := cr.Spec.ForProvider.Machines.Type; t {
	case v1alpha1.MachinesLocal:
		if c.local == nil {
			return nil, errors.New(errLocalDisabled)
		}
		backend = c.local
	case v1alpha1.MachinesOpenStack:
		var err error
		if backend, err = c.openstackMachines(ctx, cr); err != nil {
			return nil, err
		}
	default:
		return nil, errors.Errorf(errFmtMachineType, t)
	}
	return &external{kube: c.kube, machines: backend, newCluster: c.newCluster, connections: c.connections, record: c.record, backups: c.backups, newObjects: c.newObjects, transfers: c.transfers, now: time.Now, sleep: machines.Sleep}, nil
}

// configuredMachines are the machines the cluster's ProviderConfig gives clusters that name
// none, or nil.
func (c *connector) configuredMachines(ctx context.Context, cr *v1alpha1.EtcdCluster) (*v1alpha1.Machines, error) {
	s, err := openstack.CloudSettingsOf(ctx, c.kube, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConfigMachines)
	}
	if s.EtcdMachines == nil {
		return nil, nil //nolint:nilnil // A ProviderConfig without machines settings is not an error.
	}
	return &v1alpha1.Machines{Type: v1alpha1.MachinesOpenStack, OpenStack: s.EtcdMachines.OpenStack.DeepCopy()}, nil
}

// unplaced are the machines of a cluster that never had any: it names none, and its
// ProviderConfig gives none, so nothing was made and nothing is to be deleted.
type unplaced struct{}

func (unplaced) Allocate(context.Context, string, string) (machines.Machine, error) {
	return machines.Machine{}, errors.New(errNoMachines)
}

func (unplaced) Start(context.Context, string, string, machines.MemberConfig) (machines.Machine, error) {
	return machines.Machine{}, errors.New(errNoMachines)
}

func (unplaced) Delete(context.Context, string, string) error { return nil }

func (unplaced) List(context.Context, string) ([]machines.Machine, error) { return nil, nil }

type external struct {
	kube       client.Client
	machines   machines.Machines
	newCluster clusterFactory
	// connections keep clients of clusters between reconciles; nil, each reconcile opens its
	// own and Disconnect closes them.
	connections *connections
	record      event.Recorder
	backups     *backups
	newObjects  func(s3.Config) (s3.Objects, error)
	// transfers gives a restore its turn to stream the backup into the new members.
	transfers *transfers.Limiter
	now       func() time.Time
	sleep     func(context.Context, time.Duration) error

	// What the last observation found, for Update to act on.
	seen *observation
	// backupDue says the last observation found a backup due.
	backupDue bool
	// Every cluster client this reconcile opened, closed by Disconnect.
	opened []etcdclient.Cluster
}

// settings are the spec's values with their defaults.
type settings struct {
	desired      etcd.Desired
	certValidity time.Duration
}

func settingsOf(cr *v1alpha1.EtcdCluster) (settings, error) {
	p := cr.Spec.ForProvider
	v, err := etcd.ParseVersion(p.Version)
	if err != nil {
		return settings{}, errors.Wrap(err, errVersion)
	}
	s := settings{
		desired: etcd.Desired{
			Members:     int(p.Members),
			Version:     v,
			Paused:      p.Paused,
			RenewBefore: defaultRenewBefore,
		},
		certValidity: defaultCertValidity,
	}
	if s.desired.ReplaceUnhealthyAfter, err = common.DurationOr(p.ReplaceUnhealthyAfter, "spec.forProvider.replaceUnhealthyAfter", defaultReplaceUnhealty); err != nil {
		return settings{}, err
	}
	if p.TLS != nil {
		if s.certValidity, err = common.DurationOr(p.TLS.CertificateValidity, "spec.forProvider.tls.certificateValidity", defaultCertValidity); err != nil {
			return settings{}, err
		}
		if s.desired.RenewBefore, err = common.DurationOr(p.TLS.RenewBefore, "spec.forProvider.tls.renewBefore", defaultRenewBefore); err != nil {
			return settings{}, err
		}
	}
	return s, nil
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.EtcdCluster) (managed.ExternalObservation, error) {
	s, err := settingsOf(cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	ms, err := e.machines.List(ctx, clusterKey(cr))
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errListMachines)
	}
	bootstrapped := meta.GetExternalName(cr) != ""
	if len(ms) == 0 {
		if bootstrapped && !meta.WasDeleted(cr) {
			return managed.ExternalObservation{}, errors.New(errMachinesGone)
		}
		if meta.WasDeleted(cr) && cr.Spec.ForProvider.MachineType() == v1alpha1.MachinesOpenStack {
			// No machine, but the members' security group may be left (a cluster whose
			// bootstrap never made a port): Delete removes it, and the cluster goes once
			// it is gone from Neutron. An owner reference alone would leave it to a garbage
			// collector, after the cluster.
			left, err := memberGroupLeft(ctx, e.kube, cr)
			return managed.ExternalObservation{ResourceExists: left}, err
		}
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	if meta.WasDeleted(cr) {
		// Nothing to look at, and nothing needed: Delete removes every machine, whatever state
		// it is in, without the CA. (A foreground deletion deletes the CA Secret, a dependent,
		// before the cluster.)
		return managed.ExternalObservation{ResourceExists: true}, nil
	}
	a, found, err := authority.Load(ctx, e.kube, cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if !found {
		if bootstrapped {
			return managed.ExternalObservation{}, errors.New(errNoCA)
		}
		// Machines without a CA: a bootstrap that failed before anything could run. Create
		// starts over (and reuses the machines).
		return managed.ExternalObservation{ResourceExists: false}, nil
	}

	o, err := e.observe(ctx, cr, s, a, ms)
	if err != nil {
		if !bootstrapped {
			// Members that do not answer yet after a bootstrap: Create finishes it.
			return managed.ExternalObservation{ResourceExists: false}, nil
		}
		return managed.ExternalObservation{}, err
	}
	e.seen = o

	lateInit := false
	if !bootstrapped {
		setExternalName(cr, o.clusterID)
		lateInit = true
	}
	o.writeStatus(cr)
	cr.Status.AtProvider.ClientCertificateNotAfter = &metav1.Time{Time: a.Client.NotAfter}
	clientDue := !e.now().Add(s.desired.RenewBefore).Before(a.Client.NotAfter)
	e.backupDue = e.observeBackups(cr, o.next.Type == etcd.None)
	setReadiness(cr, o)
	return managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        (o.next.Type == etcd.None || o.next.Type == etcd.Wait) && !clientDue && !e.backupDue,
		ResourceLateInitialized: lateInit,
		ConnectionDetails:       connectionDetails(o, a),
	}, nil
}

// setReadiness: Ready only when the cluster is what the spec asks for and every member is
// healthy; otherwise the condition says what the provider is doing or waiting for.
func setReadiness(cr *v1alpha1.EtcdCluster, o *observation) {
	if o.next.Type == etcd.None && o.allHealthy() {
		cr.SetConditions(xpv2.Available())
		return
	}
	msg := fmt.Sprintf("%s: %s", o.next.Phase, o.next.Reason)
	var ms []machines.Machine
	for _, m := range o.members {
		if m.machine != nil {
			ms = append(ms, *m.machine)
		}
	}
	if f := serverFaults(ms); f != "" {
		msg += "; " + f
	}
	cr.SetConditions(xpv2.Unavailable().WithMessage(msg))
}

// serverFaults is what the cloud says of the machines' failed servers ("server of db-2 is
// ERROR: No valid host was found"), for a person to read in a condition.
func serverFaults(ms []machines.Machine) string {
	return strings.Join(failedServers(ms), "; ")
}

// failedServers are the faults of the machines whose server the cloud failed, one each.
func failedServers(ms []machines.Machine) []string {
	var out []string
	for _, m := range ms {
		if s := m.Server; s != nil && s.Fault != "" {
			out = append(out, fmt.Sprintf("server of %s is %s: %s", m.Name, s.Status, s.Fault))
		}
	}
	return out
}

func connectionDetails(o *observation, a *authority.Authority) managed.ConnectionDetails {
	return managed.ConnectionDetails{
		v1alpha1.ConnectionEndpoints: []byte(strings.Join(o.endpoints(), ",")),
		v1alpha1.ConnectionCACert:    a.CA.CertPEM,
		v1alpha1.ConnectionTLSCert:   a.Client.CertPEM,
		v1alpha1.ConnectionTLSKey:    a.Client.KeyPEM,
	}
}

// Create bootstraps the cluster: a CA, one machine per member, every member started at once
// with a static initial cluster (what an operator would do by hand, and the fastest way).
// Every part is idempotent, so a bootstrap interrupted half way is finished by the next one.
func (e *external) Create(ctx context.Context, cr *v1alpha1.EtcdCluster) (managed.ExternalCreation, error) {
	s, err := settingsOf(cr)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	a, err := authority.Ensure(ctx, e.kube, cr, s.certValidity, e.now())
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	cr.Status.AtProvider.CASecretName = authority.SecretName(cr)
	var restore *machines.RestoreSource
	if cr.Spec.ForProvider.Restore != nil {
		// The members stream the backup in this reconcile: it waits for its namespace's turn.
		release, ok := e.transfers.TryAcquire(cr.GetNamespace())
		if !ok {
			return managed.ExternalCreation{}, errors.Errorf(errFmtRestoreWaits, cr.GetNamespace(), e.transfers.Slots())
		}
		defer release()
		if restore, err = e.restoreSource(ctx, cr, s); err != nil {
			return managed.ExternalCreation{}, err
		}
	}
	if err := e.bootstrap(ctx, cr, s, a, restore); err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errBootstrap)
	}
	cr.Status.AtProvider.Phase = v1alpha1.PhaseCreating
	e.record.Event(cr, event.Normal(reasonBootstrapped, fmt.Sprintf("Started %d etcd %s members", s.desired.Members, s.desired.Version)))
	return managed.ExternalCreation{}, nil
}

// Update executes the planner's steps until the cluster is as desired, a step has to wait
// longer than a moment, or the time budget is spent.
func (e *external) Update(ctx context.Context, cr *v1alpha1.EtcdCluster) (managed.ExternalUpdate, error) {
	s, err := settingsOf(cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	a, _, err := authority.Load(ctx, e.kube, cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	if a == nil {
		return managed.ExternalUpdate{}, errors.New(errNoCA)
	}
	if !e.now().Add(s.desired.RenewBefore).Before(a.Client.NotAfter) {
		if err := authority.RenewClient(ctx, e.kube, cr, a, s.certValidity, e.now()); err != nil {
			return managed.ExternalUpdate{}, err
		}
		e.record.Event(cr, event.Normal(reasonRenewedClient, "Renewed the client certificate in the connection Secret"))
	}
	if e.backupDue && e.seen != nil {
		// Before any step: a step may take the rest of the budget.
		e.startBackup(ctx, cr, a, e.seen)
	}

	deadline := e.now().Add(updateBudget)
	o := e.seen
	for {
		if o == nil {
			ms, err := e.machines.List(ctx, clusterKey(cr))
			if err != nil {
				return managed.ExternalUpdate{}, errors.Wrap(err, errListMachines)
			}
			if o, err = e.observe(ctx, cr, s, a, ms); err != nil {
				return managed.ExternalUpdate{}, err
			}
		}
		o.writeStatus(cr)
		setReadiness(cr, o)
		if e.backupFirst(ctx, cr, s.desired, a, o) {
			return managed.ExternalUpdate{ConnectionDetails: connectionDetails(o, a)}, nil
		}
		next := o.next
		done, err := e.step(ctx, cr, s, a, o, next)
		if err != nil {
			return managed.ExternalUpdate{}, err
		}
		if done || e.now().After(deadline) {
			return managed.ExternalUpdate{ConnectionDetails: connectionDetails(o, a)}, nil
		}
		e.reportProgress(ctx, cr)
		o = nil
	}
}

// reportProgress writes where the change is (phase, next step, remaining, refusal) between
// the steps of one Update, so that a change of several steps (an upgrade of five members takes
// ten) shows its progress: the reconciler writes status only when Update returns. It is a
// merge patch of those fields alone, so a cache that lags cannot make it conflict, and the
// resource's version is carried over so the reconciler's own write at the end goes through.
// Best effort: that write says the same.
func (e *external) reportProgress(ctx context.Context, cr *v1alpha1.EtcdCluster) {
	at := cr.Status.AtProvider
	e.patchAtProvider(ctx, cr, map[string]any{"phase": at.Phase, "nextStep": at.NextStep, "remaining": at.Remaining, "refused": at.Refused})
}

// patchAtProvider merge-patches fields of status.atProvider, best effort.
func (e *external) patchAtProvider(ctx context.Context, cr *v1alpha1.EtcdCluster, fields map[string]any) {
	if e.kube == nil {
		return
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"atProvider": fields}})
	if err != nil {
		return
	}
	written := cr.DeepCopy()
	if err := e.kube.Status().Patch(ctx, written, client.RawPatch(types.MergePatchType, patch)); err == nil {
		cr.SetResourceVersion(written.GetResourceVersion())
	}
}

// step executes one action. done says the loop should stop (nothing left, or only waiting
// that takes longer than a moment).
func (e *external) step(ctx context.Context, cr *v1alpha1.EtcdCluster, s settings, a *authority.Authority, o *observation, next etcd.Action) (done bool, err error) {
	switch next.Type {
	case etcd.None:
		cr.Status.AtProvider.Refused = ""
		return true, nil
	case etcd.Blocked:
		return true, errors.New(next.Reason)
	case etcd.Wait:
		if next.Phase == etcd.PhaseDegraded {
			// An unhealthy member within its grace time, or an election: the poll comes back.
			return true, nil
		}
		if next.Member != "" {
			// A learner that joined from the leader's snapshot waits for an entry after it
			// before it can announce itself (see etcdclient.Cluster's Nudge): on a cluster
			// nobody writes to, this is that entry. Best effort: the wait goes on anyway.
			_ = o.cluster.Nudge(ctx)
		}
		return false, e.sleep(ctx, time.Second)
	}
	err = e.execute(ctx, cr, s, a, o, next)
	if etcdclient.IsRetryable(err) {
		// etcd refuses membership changes for a few seconds after a join, and promotes a
		// learner only once it caught up: expected, not an error. Status says why the step
		// waits; the retry is the same step on the same machine.
		cr.Status.AtProvider.Refused = strings.TrimSpace(fmt.Sprintf("%s %s", next.Type, next.Member)) + ": " + err.Error() + " (retrying)"
		return false, e.sleep(ctx, time.Second)
	}
	if err == nil {
		cr.Status.AtProvider.Refused = ""
	}
	return false, err
}

// Delete removes every machine (and its data) and the CA; crossplane-runtime removes the
// connection Secret.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.EtcdCluster) (managed.ExternalDelete, error) {
	// The backups stay in their bucket: they are what a new cluster restores from.
	if e.backups != nil {
		e.backups.forget(cr.GetUID())
	}
	if e.connections != nil {
		e.connections.forget(cr.GetUID())
	}
	ms, err := e.machines.List(ctx, clusterKey(cr))
	if err != nil {
		return managed.ExternalDelete{}, errors.Wrap(err, errListMachines)
	}
	for _, m := range ms {
		if err := e.machines.Delete(ctx, clusterKey(cr), m.Name); err != nil {
			return managed.ExternalDelete{}, errors.Wrap(err, errDeleteMachine)
		}
	}
	if len(ms) > 0 {
		e.record.Event(cr, event.Normal(reasonDeletedMachines, fmt.Sprintf("Deleted %d machines and their data", len(ms))))
	}
	if cr.Spec.ForProvider.MachineType() == v1alpha1.MachinesOpenStack {
		if err := deleteMemberGroup(ctx, e.kube, cr); err != nil {
			return managed.ExternalDelete{}, err
		}
	}
	return managed.ExternalDelete{}, authority.Delete(ctx, e.kube, cr)
}

// Disconnect closes the cluster clients the reconcile opened.
func (e *external) Disconnect(_ context.Context) error {
	for _, c := range e.opened {
		_ = c.Close()
	}
	e.opened = nil
	return nil
}

// clusterKey identifies the cluster's machines: the resource's UID, so that a new EtcdCluster
// of the same name never finds the machines of an old one.
func clusterKey(cr *v1alpha1.EtcdCluster) string { return string(cr.GetUID()) }
