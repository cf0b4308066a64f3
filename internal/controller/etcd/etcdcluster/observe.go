package etcdcluster

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
	"github.com/stackservices/provider-stackservices/internal/controller/etcd/authority"
	"github.com/stackservices/provider-stackservices/internal/etcd"
	"github.com/stackservices/provider-stackservices/internal/machines"
)

const (
	errNothingRuns = "none of the cluster's machines runs its member"
	errFmtMembers  = "cannot read the cluster's membership from any member (%d of %d machines run)"
	membersTimeout = 5 * time.Second
)

// member is one member as the provider sees it: etcd's membership entry, the member's own
// status, and its machine, joined on the peer URL.
type member struct {
	plan      etcd.Member
	peerURL   string
	clientURL string
	machine   *machines.Machine
	status    *etcdclient.MemberStatus
}

// observation is the whole cluster at one moment, and the planner's next step for it.
type observation struct {
	cluster   etcdclient.Cluster
	clusterID uint64
	raw       []etcdclient.Member
	members   []member
	leader    uint64
	next      etcd.Action
}

func (e *external) observe(ctx context.Context, cr *v1alpha1.EtcdCluster, s settings, a *authority.Authority, ms []machines.Machine) (*observation, error) {
	// Every machine that was ever started: what the backend remembers of a process (its
	// PID, say) may be out of date, and etcd itself says who answers.
	var endpoints []string
	for _, m := range ms {
		if m.State != machines.Allocated && m.ClientURL != "" {
			endpoints = append(endpoints, m.ClientURL)
		}
	}
	if len(endpoints) == 0 {
		return nil, errors.New(errNothingRuns)
	}
	cl, err := e.connect(ctx, cr, endpoints, a)
	if err != nil {
		return nil, errors.Wrap(err, errConnectCluster)
	}

	mctx, cancel := context.WithTimeout(ctx, membersTimeout)
	defer cancel()
	id, raw, err := cl.Members(mctx)
	if err != nil {
		if e.connections != nil {
			// The next reconcile dials anew rather than waiting on this client's retries.
			e.connections.forget(cr.GetUID())
		}
		return nil, errors.Wrapf(err, errFmtMembers, len(endpoints), len(ms))
	}
	o := &observation{cluster: cl, clusterID: id, raw: raw}
	o.join(ctx, cl, raw, ms, previousUnhealthy(cr), e.now())
	d := s.desired
	// A member removed to be replaced leaves the cluster one short: adding its replacement
	// is still healing.
	d.Healing = cr.Status.AtProvider.Phase == v1alpha1.PhaseHealing
	o.next = etcd.Next(d, etcd.Observed{Members: o.planMembers(), Leader: o.leader, Now: e.now()})
	return o, nil
}

// connect returns a client of the cluster's members: the one kept for the cluster when the
// provider keeps connections, or one of this reconcile's own, which Disconnect closes.
func (e *external) connect(ctx context.Context, cr *v1alpha1.EtcdCluster, endpoints []string, a *authority.Authority) (etcdclient.Cluster, error) {
	if e.connections != nil {
		// The certificates by their hash: the key of a kept client holds no secret. (PEM
		// blocks end with their END line, so the concatenation is unambiguous.)
		sum := sha256.Sum256(slices.Concat(a.CA.CertPEM, a.Client.CertPEM))
		return e.connections.get(ctx, cr.GetUID(), endpoints, hex.EncodeToString(sum[:]), a.TLSConfig)
	}
	tlsCfg, err := a.TLSConfig()
	if err != nil {
		return nil, err
	}
	cl, err := e.newCluster(ctx, endpoints, tlsCfg)
	if err != nil {
		return nil, err
	}
	e.opened = append(e.opened, cl)
	return cl, nil
}

// join matches membership entries and machines by peer URL, and asks every running member
// for its status, all at once.
func (o *observation) join(ctx context.Context, cl etcdclient.Cluster, raw []etcdclient.Member, ms []machines.Machine, unhealthySince map[string]time.Time, now time.Time) {
	byPeer := make(map[string]*machines.Machine, len(ms))
	for i := range ms {
		byPeer[ms[i].PeerURL] = &ms[i]
	}
	claimed := map[string]bool{}
	for _, r := range raw {
		m := member{plan: etcd.Member{Name: r.Name, ID: r.ID, Learner: r.IsLearner}}
		if len(r.PeerURLs) > 0 {
			m.peerURL = r.PeerURLs[0]
		}
		if len(r.ClientURLs) > 0 {
			m.clientURL = r.ClientURLs[0]
		}
		if mc, ok := byPeer[m.peerURL]; ok {
			m.machine = mc
			claimed[mc.Name] = true
			if m.plan.Name == "" {
				// A learner that has not started yet has no name in the membership.
				m.plan.Name = mc.Name
			}
			if m.clientURL == "" {
				m.clientURL = mc.ClientURL
			}
		}
		o.members = append(o.members, m)
	}
	for i := range ms {
		if !claimed[ms[i].Name] {
			o.members = append(o.members, member{plan: etcd.Member{Name: ms[i].Name}, peerURL: ms[i].PeerURL, clientURL: ms[i].ClientURL, machine: &ms[i]})
		}
	}

	o.statuses(ctx, cl)

	votes := map[uint64]int{}
	for i := range o.members {
		m := &o.members[i]
		if m.machine != nil {
			m.plan.Machine = etcd.MachineState(m.machine.State)
			m.plan.CertNotAfter = m.machine.CertNotAfter
			m.plan.Version, _ = etcd.ParseVersion(m.machine.Version)
		}
		if m.status != nil {
			if v, err := etcd.ParseVersion(m.status.Version); err == nil {
				m.plan.Version = v
			}
			if !m.plan.Learner && m.status.Leader != 0 {
				votes[m.status.Leader]++
			}
		}
		// etcd's word wins: a member that answers runs, whatever its machine's record says
		// (a member restarted outside the provider has a new process).
		m.plan.Healthy = m.status != nil
		if m.plan.Healthy && m.plan.Machine == etcd.MachineStopped {
			m.plan.Machine = etcd.MachineRunning
		}
		// A new member's machine that is still booting is not held against it: the clock
		// starts when it should be up (a Nova server takes tens of seconds; a process, none).
		// A voter ran before: it gets no such time.
		booting := m.plan.Learner && m.machine != nil && m.plan.Machine == etcd.MachineRunning && now.Before(m.machine.BootingUntil)
		if !m.plan.Healthy && !booting {
			m.plan.UnhealthySince = now
			if since, ok := unhealthySince[m.plan.Name]; ok && since.Before(now) {
				m.plan.UnhealthySince = since
			}
		}
	}
	// The leader most voters agree on: right after an election a member may still name the
	// previous one.
	for id, n := range votes {
		if n > votes[o.leader] || n == votes[o.leader] && id < o.leader {
			o.leader = id
		}
	}
	slices.SortFunc(o.members, func(a, b member) int { return compareNames(a.plan.Name, b.plan.Name) })
}

// statuses asks every member that was started about itself, concurrently; a member that does
// not answer within statusTimeout is unhealthy.
func (o *observation) statuses(ctx context.Context, cl etcdclient.Cluster) {
	var wg sync.WaitGroup
	for i := range o.members {
		m := &o.members[i]
		if m.clientURL == "" || m.plan.ID == 0 || (m.machine != nil && m.machine.State == machines.Allocated) {
			continue
		}
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			if st, err := cl.Status(sctx, m.clientURL); err == nil && st.ID == m.plan.ID {
				m.status = &st
			}
		})
	}
	wg.Wait()
}

func (o *observation) planMembers() []etcd.Member {
	out := make([]etcd.Member, 0, len(o.members))
	for _, m := range o.members {
		out = append(out, m.plan)
	}
	return out
}

func (o *observation) allHealthy() bool {
	for _, m := range o.members {
		if m.plan.ID != 0 && !m.plan.Healthy {
			return false
		}
	}
	return true
}

// endpoints are the client URLs of the voting members: learners refuse most requests.
func (o *observation) endpoints() []string {
	var out []string
	for _, m := range o.members {
		if m.plan.ID != 0 && !m.plan.Learner && m.clientURL != "" {
			out = append(out, m.clientURL)
		}
	}
	return out
}

func (o *observation) byID(id uint64) (member, bool) {
	for _, m := range o.members {
		if m.plan.ID == id && id != 0 {
			return m, true
		}
	}
	return member{}, false
}

func (o *observation) byName(name string) (member, bool) {
	for _, m := range o.members {
		if m.plan.Name == name {
			return m, true
		}
	}
	return member{}, false
}

// writeStatus reports the observation in status.atProvider.
func (o *observation) writeStatus(cr *v1alpha1.EtcdCluster) {
	at := &cr.Status.AtProvider
	at.Phase = o.next.Phase
	at.ClusterID = strconv.FormatUint(o.clusterID, 16)
	at.CASecretName = authority.SecretName(cr)
	at.NextStep, at.Remaining = "", int32(o.next.Remaining) //nolint:gosec // A handful of members.
	if o.next.Type != etcd.None {
		at.NextStep = o.next.Reason
	}
	at.Leader, at.Version = "", ""
	var oldest etcd.Version
	at.Members = make([]v1alpha1.MemberObservation, 0, len(o.members))
	for _, m := range o.members {
		// Every name seen is remembered, so a member removed later (the dead one a
		// replacement is for) never lends its name to a new one.
		at.LastMemberIndex = max(at.LastMemberIndex, nameIndex(m.plan.Name))
		mo := v1alpha1.MemberObservation{
			Name: m.plan.Name, PeerURL: m.peerURL, ClientURL: m.clientURL, Learner: m.plan.Learner,
			Healthy: m.plan.Healthy, Leader: m.plan.ID != 0 && m.plan.ID == o.leader,
		}
		if m.plan.ID != 0 {
			mo.ID = strconv.FormatUint(m.plan.ID, 16)
		}
		if !m.plan.Version.IsZero() {
			mo.Version = m.plan.Version.String()
			if m.plan.ID != 0 && !m.plan.Learner && (oldest.IsZero() || m.plan.Version.Compare(oldest) < 0) {
				oldest = m.plan.Version
			}
		}
		if m.machine != nil {
			mo.MachineID, mo.MachineState = m.machine.Address, string(m.machine.State)
			if sv := m.machine.Server; sv != nil {
				mo.Server = &v1alpha1.ServerObservation{ID: sv.ID, Host: sv.Host, Zone: sv.Zone, Status: sv.Status, Fault: sv.Fault}
			}
		}
		if !m.plan.UnhealthySince.IsZero() {
			mo.UnhealthySince = &metav1.Time{Time: m.plan.UnhealthySince}
		}
		if !m.plan.CertNotAfter.IsZero() {
			mo.CertificateNotAfter = &metav1.Time{Time: m.plan.CertNotAfter}
		}
		if mo.Leader {
			at.Leader = m.plan.Name
		}
		at.Members = append(at.Members, mo)
	}
	if !oldest.IsZero() {
		at.Version = oldest.String()
	}
	at.Endpoints = o.endpoints()
}

// previousUnhealthy is when each member was first seen unhealthy, as the last status says:
// the replacement threshold counts from there, across reconciles.
func previousUnhealthy(cr *v1alpha1.EtcdCluster) map[string]time.Time {
	out := map[string]time.Time{}
	for _, m := range cr.Status.AtProvider.Members {
		if !m.Healthy && m.UnhealthySince != nil {
			out[m.Name] = m.UnhealthySince.Time
		}
	}
	return out
}

// compareNames orders member names by their numeric suffix (name-2 before name-10).
func compareNames(a, b string) int {
	ia, ib := nameIndex(a), nameIndex(b)
	if ia != ib && ia >= 0 && ib >= 0 {
		return cmp.Compare(ia, ib)
	}
	return strings.Compare(a, b)
}
