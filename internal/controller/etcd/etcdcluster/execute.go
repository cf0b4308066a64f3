package etcdcluster

import (
	"context"
	stderrors "errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
	"github.com/stackservices/provider-stackservices/internal/controller/etcd/authority"
	"github.com/stackservices/provider-stackservices/internal/etcd"
	"github.com/stackservices/provider-stackservices/internal/machines"
)

const (
	errAllocate      = "cannot allocate a machine"
	errStart         = "cannot start a member"
	errFmtAddLearner = "cannot add learner %s to the cluster"
	errPromote       = "cannot promote a learner"
	errRemoveMember  = "cannot remove a member"
	errMoveLeader    = "cannot move leadership"
	errFmtNoMember   = "member %s is not in the observation"
	errAddress       = "the machine's address is not an IP address"
	errNotReady      = "the members started but the cluster did not elect a leader in time"
	errNoQuorum      = "too many members' servers failed for the others to form a quorum"

	reasonBootstrapped    = event.Reason("Bootstrapped")
	reasonAddedMember     = event.Reason("AddedMember")
	reasonStartedMember   = event.Reason("StartedMember")
	reasonPromotedMember  = event.Reason("PromotedMember")
	reasonRemovedMember   = event.Reason("RemovedMember")
	reasonMovedLeader     = event.Reason("MovedLeader")
	reasonDeletedMachine  = event.Reason("DeletedMachine")
	reasonDeletedMachines = event.Reason("DeletedMachines")
	reasonRenewedClient   = event.Reason("RenewedClientCertificate")

	// bootstrapWait is how long Create waits for a new cluster to elect a leader, so that it
	// can record the cluster ID at once; past it, the next observation adopts the cluster.
	bootstrapWait = 20 * time.Second
)

// execute carries out one step of the planner.
func (e *external) execute(ctx context.Context, cr *v1alpha1.EtcdCluster, s settings, a *authority.Authority, o *observation, next etcd.Action) error {
	key := clusterKey(cr)
	switch next.Type {
	case etcd.AddMember:
		m, err := e.machineForAdd(ctx, cr, o, next)
		if err != nil {
			return err
		}
		name := m.Name
		added, members, err := o.cluster.AddLearner(ctx, m.PeerURL)
		if err != nil {
			// The machine runs nothing and stays allocated: the planner keeps it as the
			// spare the retry of this add uses.
			return errors.Wrapf(err, errFmtAddLearner, name)
		}
		e.record.Event(cr, event.Normal(reasonAddedMember, fmt.Sprintf("Added learner %s (%s, etcd %s): %s", name, m.Address, next.Version, next.Reason)))
		return e.start(ctx, cr, s, a, m, next.Version, initialCluster(members, added.ID, name, m.PeerURL))

	case etcd.StartMember:
		mem, ok := o.byName(next.Member)
		if !ok || mem.machine == nil {
			return errors.Errorf(errFmtNoMember, next.Member)
		}
		v := s.desired.Version
		if pv, err := etcd.ParseVersion(mem.machine.Version); err == nil && mem.machine.Version != "" {
			v = pv
		}
		if err := e.start(ctx, cr, s, a, *mem.machine, v, initialCluster(o.raw, next.ID, next.Member, mem.peerURL)); err != nil {
			return err
		}
		e.record.Event(cr, event.Normal(reasonStartedMember, fmt.Sprintf("Started learner %s", next.Member)))
		return nil

	case etcd.PromoteMember:
		if err := o.cluster.Promote(ctx, next.ID); err != nil {
			return errors.Wrap(err, errPromote)
		}
		e.record.Event(cr, event.Normal(reasonPromotedMember, fmt.Sprintf("Promoted %s to a voting member", next.Member)))
		return nil

	case etcd.RemoveMember:
		if err := o.cluster.Remove(ctx, next.ID); err != nil {
			return errors.Wrap(err, errRemoveMember)
		}
		if err := e.machines.Delete(ctx, key, next.Member); err != nil {
			return errors.Wrap(err, errDeleteMachine)
		}
		e.record.Event(cr, event.Normal(reasonRemovedMember, fmt.Sprintf("Removed member %s and deleted its machine: %s", next.Member, next.Reason)))
		return nil

	case etcd.DeleteMachine:
		if err := e.machines.Delete(ctx, key, next.Member); err != nil {
			return errors.Wrap(err, errDeleteMachine)
		}
		e.record.Event(cr, event.Normal(reasonDeletedMachine, next.Reason))
		return nil

	case etcd.MoveLeader:
		leader, ok := o.byID(o.leader)
		if !ok {
			return errors.Errorf(errFmtNoMember, strconv.FormatUint(o.leader, 16))
		}
		if err := o.cluster.MoveLeader(ctx, leader.clientURL, next.ID); err != nil {
			return errors.Wrap(err, errMoveLeader)
		}
		e.record.Event(cr, event.Normal(reasonMovedLeader, next.Reason))
		return nil
	}
	return nil
}

// machineForAdd is the machine of the member an add makes: the spare an earlier, refused add
// allocated (the planner names it), or a new one with a name never given before.
func (e *external) machineForAdd(ctx context.Context, cr *v1alpha1.EtcdCluster, o *observation, next etcd.Action) (machines.Machine, error) {
	var spare *machines.Machine
	if next.Member != "" {
		if m, ok := o.byName(next.Member); ok {
			spare = m.machine
		}
	}
	if spare != nil && spare.Server != nil {
		return *spare, nil
	}
	// The member's server is made after the add: one that could not run is never added.
	if err := machines.CheckCapacity(ctx, e.machines, 1); err != nil {
		return machines.Machine{}, err
	}
	if spare != nil {
		return *spare, nil
	}
	m, err := e.machines.Allocate(ctx, clusterKey(cr), nextName(cr, o))
	return m, errors.Wrap(err, errAllocate)
}

// start issues the member's certificate and starts it on its machine.
func (e *external) start(ctx context.Context, cr *v1alpha1.EtcdCluster, s settings, a *authority.Authority, m machines.Machine, v etcd.Version, initial string) error {
	cfg, err := e.memberConfig(cr, s, a, m, v)
	if err != nil {
		return err
	}
	cfg.InitialCluster, cfg.InitialClusterState = initial, "existing"
	_, err = e.machines.Start(ctx, clusterKey(cr), m.Name, cfg)
	return errors.Wrap(err, errStart)
}

func (e *external) memberConfig(cr *v1alpha1.EtcdCluster, s settings, a *authority.Authority, m machines.Machine, v etcd.Version) (machines.MemberConfig, error) {
	ip := net.ParseIP(m.Address)
	if ip == nil {
		return machines.MemberConfig{}, errors.New(errAddress)
	}
	cert, err := a.CA.IssueMember(m.Name, []net.IP{ip}, s.certValidity, e.now())
	if err != nil {
		return machines.MemberConfig{}, errors.Wrap(err, authority.ErrIssue)
	}
	cfg := machines.MemberConfig{
		Version:             v.String(),
		InitialClusterToken: clusterKey(cr),
		CA:                  a.CA.CertPEM,
		Cert:                cert.CertPEM,
		Key:                 cert.KeyPEM,
		CertNotAfter:        cert.NotAfter,
	}
	if st := cr.Spec.ForProvider.Settings; st != nil {
		cfg.QuotaBackendBytes = ptr.Deref(st.QuotaBackendBytes, 0)
		cfg.AutoCompactionMode = ptr.Deref(st.AutoCompactionMode, "")
		cfg.AutoCompactionRetention = ptr.Deref(st.AutoCompactionRetention, "")
		cfg.SnapshotCount = uint64(max(ptr.Deref(st.SnapshotCount, 0), 0))
	}
	return cfg, nil
}

// bootstrap allocates and starts every member of a new cluster at once (restoring each from
// the same backup first, when restore is set), then waits (a while) for the cluster to elect
// a leader and records its ID as the external name.
func (e *external) bootstrap(ctx context.Context, cr *v1alpha1.EtcdCluster, s settings, a *authority.Authority, restore *machines.RestoreSource) error {
	key := clusterKey(cr)
	existing, err := e.machines.List(ctx, key)
	if err != nil {
		return errors.Wrap(err, errListMachines)
	}
	names := make([]string, s.desired.Members)
	wanted := map[string]bool{}
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", cr.GetName(), i)
		wanted[names[i]] = true
	}
	// max: an earlier, larger attempt may have given higher names already.
	cr.Status.AtProvider.LastMemberIndex = max(cr.Status.AtProvider.LastMemberIndex, int64(len(names)-1))
	// Machines of an earlier attempt with another size would name members the new initial
	// cluster does not know.
	for _, m := range existing {
		if !wanted[m.Name] {
			if err := e.machines.Delete(ctx, key, m.Name); err != nil {
				return errors.Wrap(err, errDeleteMachine)
			}
		}
	}
	// Every member's server or none: a bootstrap that cannot finish makes nothing.
	missing := len(names)
	for _, m := range existing {
		if wanted[m.Name] && m.Server != nil {
			missing--
		}
	}
	if err := machines.CheckCapacity(ctx, e.machines, missing); err != nil {
		return err
	}
	ms := make([]machines.Machine, len(names))
	peers := make([]string, len(names))
	for i, n := range names {
		if ms[i], err = e.machines.Allocate(ctx, key, n); err != nil {
			return errors.Wrap(err, errAllocate)
		}
		peers[i] = n + "=" + ms[i].PeerURL
	}
	cfgs := make([]machines.MemberConfig, len(ms))
	for i, m := range ms {
		if cfgs[i], err = e.memberConfig(cr, s, a, m, s.desired.Version); err != nil {
			return err
		}
		cfgs[i].InitialCluster, cfgs[i].InitialClusterState, cfgs[i].Restore = strings.Join(peers, ","), "new", restore
	}
	// All at once: a member waits for the others to form the cluster anyway, and a restore
	// (a download and etcdutl) takes as long on each.
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			if _, err := e.machines.Start(ctx, key, m.Name, cfgs[i]); err != nil {
				errs[i] = errors.Wrap(err, errStart)
			}
		})
	}
	wg.Wait()
	if restore != nil {
		if err := refusedRestore(ctx, restoredKey(cr), restore, errs); err != nil {
			// The backup cannot be restored. The machines go, so that nothing is left of the
			// attempt.
			for _, m := range ms {
				_ = e.machines.Delete(ctx, key, m.Name)
			}
			return err
		}
	}
	if err := stderrors.Join(errs...); err != nil {
		return err
	}
	return e.awaitLeader(ctx, cr, s, a)
}

// awaitLeader waits until the new cluster has a leader, and records its ID.
func (e *external) awaitLeader(ctx context.Context, cr *v1alpha1.EtcdCluster, s settings, a *authority.Authority) error {
	deadline := e.now().Add(bootstrapWait)
	for {
		ms, err := e.machines.List(ctx, clusterKey(cr))
		if err != nil {
			return errors.Wrap(err, errListMachines)
		}
		o, err := e.observe(ctx, cr, s, a, ms)
		if err == nil && o.leader != 0 {
			setExternalName(cr, o.clusterID)
			return nil
		}
		failed := failedServers(ms)
		if len(ms)-len(failed) < len(ms)/2+1 {
			// A server the cloud failed (Nova's ERROR, a build past its timeout) does not
			// recover by itself, and without a quorum of the others no leader comes:
			// waiting out bootstrapWait would only hold this reconcile, and a deletion of
			// the cluster asked for meanwhile, behind it. (A minority of failed servers is
			// waited for: the others elect a leader, and the planner replaces them.)
			return errors.Errorf("%s: %s", errNoQuorum, strings.Join(failed, "; "))
		}
		if e.now().After(deadline) {
			if len(failed) > 0 {
				// Nova's word on why a member never ran ("No valid host was found").
				return errors.Errorf("%s: %s", errNotReady, strings.Join(failed, "; "))
			}
			return errors.New(errNotReady)
		}
		if err := e.sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// initialCluster is etcd's --initial-cluster for a member joining: every started member
// and the joining one itself.
func initialCluster(members []etcdclient.Member, joiningID uint64, joiningName, joiningPeer string) string {
	var out []string
	for _, m := range members {
		if m.ID == joiningID || m.Name == "" || len(m.PeerURLs) == 0 {
			continue
		}
		out = append(out, m.Name+"="+m.PeerURLs[0])
	}
	return strings.Join(append(out, joiningName+"="+joiningPeer), ",")
}

// nextName is a name no member or machine of the cluster had: the resource's name and one
// more than the highest index ever given or seen, which it records in status. The members
// observed now are not enough: a member removed a moment ago (the dead one a replacement is
// for) is gone from the observation, so bootstrap and writeStatus keep
// status.atProvider.lastMemberIndex for it.
func nextName(cr *v1alpha1.EtcdCluster, o *observation) string {
	highest := cr.Status.AtProvider.LastMemberIndex
	for _, m := range o.members {
		highest = max(highest, nameIndex(m.plan.Name))
	}
	cr.Status.AtProvider.LastMemberIndex = highest + 1
	return fmt.Sprintf("%s-%d", cr.GetName(), highest+1)
}

// nameIndex is the number after the last dash of a member name, or -1.
func nameIndex(name string) int64 {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return -1
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func setExternalName(cr *v1alpha1.EtcdCluster, clusterID uint64) {
	meta.SetExternalName(cr, strconv.FormatUint(clusterID, 16))
}
