// Package etcd decides how an etcd cluster the provider runs gets from what it is to what its
// EtcdCluster asks for, one safe step at a time. It is pure logic: Next takes the desired and
// the observed state and returns the single next action; the controller executes it, observes
// again and asks again. Every rule that keeps data safe lives here, so that it can be tested
// over every cluster state that matters without running etcd.
//
// The rules, in the order Next applies them:
//
//  1. A paused cluster is left alone.
//  2. Without quorum nothing is done: the provider never forces a new cluster. Without a
//     leader, it waits.
//  3. Machines that belong to no member (a step interrupted half way) are deleted, except one
//     machine that was allocated and never started: the spare of an add etcd refused (it
//     refuses membership changes for a few seconds after a join). The next add reuses it, so
//     a refused add is retried with the same machine and name; a spare no add needs is
//     deleted once the cluster is as desired.
//  4. A learner is started, promoted once etcd accepts it (caught up with the leader), or
//     removed when it does not become healthy in time. There is never more than one learner,
//     and nothing else happens while there is one.
//  5. A voter that stays unhealthy for longer than the threshold is replaced: it is removed
//     (only when the voters left keep quorum), then a new member joins as a learner and is
//     promoted. The dead member goes first because etcd refuses to add any member while a
//     voter is disconnected (its strict reconfiguration check), and it costs no fault
//     tolerance: n voters with one dead survive exactly as many further failures as the n-1
//     healthy ones do. While a voter is unhealthy but within the threshold, the provider
//     waits: it never scales or upgrades a degraded cluster.
//  6. Scaling out adds one learner; scaling in removes one voter that is not the leader.
//     Upgrades and certificate renewal replace members one at a time: a new member of the
//     target version (with a fresh certificate) joins and is promoted, then one old member
//     is removed. Leadership is moved away from a member before it is removed.
//  7. The target version must be reachable: no downgrade, one minor version at a time. When it
//     is not, the cluster keeps its size at the version it runs, and the step is Blocked with
//     the reason.
package etcd

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
)

// Desired is what the EtcdCluster asks for.
type Desired struct {
	// Members is the number of voting members.
	Members int
	Version Version
	Paused  bool
	// ReplaceUnhealthyAfter is how long a member may stay unhealthy before it is replaced.
	ReplaceUnhealthyAfter time.Duration
	// RenewBefore: members whose certificate expires within this are replaced.
	RenewBefore time.Duration
	// Healing says a member was removed to be replaced, so that adding its replacement is
	// reported as healing, not scaling.
	Healing bool
}

// MachineState is what the machine backend says of a member's machine.
type MachineState string

// Machine states, as the planner sees them.
const (
	// NoMachine: the member has no machine (someone deleted it).
	NoMachine MachineState = ""
	// MachineAllocated: the machine has an address but its member was never started.
	MachineAllocated MachineState = "Allocated"
	// MachineRunning: the member's process runs (it may still be unhealthy).
	MachineRunning MachineState = "Running"
	// MachineStopped: the member's process is gone.
	MachineStopped MachineState = "Stopped"
)

// A Member joins what etcd's membership, the member itself and its machine say of it.
type Member struct {
	Name string
	// ID is the member's etcd ID; 0 for a machine that belongs to no member.
	ID      uint64
	Learner bool
	Machine MachineState
	// Healthy members run and answer a status request.
	Healthy bool
	// Version is the etcd version the member runs.
	Version Version
	// UnhealthySince is when the member was first seen unhealthy (zero when healthy).
	UnhealthySince time.Time
	// CertNotAfter is when the member's certificate expires (zero: unknown).
	CertNotAfter time.Time
}

func (m Member) voter() bool { return m.ID != 0 && !m.Learner }

// Observed is the cluster as it is now.
type Observed struct {
	Members []Member
	// Leader is the ID of the leader; 0 when there is none.
	Leader uint64
	Now    time.Time
}

// ActionType says what the controller does next.
type ActionType string

// Actions.
const (
	// None: the cluster is as desired (or paused).
	None ActionType = "None"
	// Wait: something settles by itself (a learner catching up, an election); look again
	// soon. Nothing is wrong.
	Wait ActionType = "Wait"
	// Blocked: the provider cannot go on safely; a person has to act (the reason says how).
	Blocked ActionType = "Blocked"
	// AddMember allocates a machine, adds its member as a learner and starts it.
	AddMember ActionType = "AddMember"
	// StartMember starts the machine of a learner that was added but never started.
	StartMember ActionType = "StartMember"
	// PromoteMember makes a learner a voter.
	PromoteMember ActionType = "PromoteMember"
	// RemoveMember removes a member from the membership, then deletes its machine.
	RemoveMember ActionType = "RemoveMember"
	// DeleteMachine deletes a machine that belongs to no member.
	DeleteMachine ActionType = "DeleteMachine"
	// MoveLeader hands leadership to another voter.
	MoveLeader ActionType = "MoveLeader"
)

// An Action is the next step.
type Action struct {
	Type ActionType
	// Member names the member acted on (AddMember: none yet; MoveLeader: the new leader).
	Member string
	// ID of the member acted on (MoveLeader: the new leader's).
	ID uint64
	// Version of the member AddMember adds.
	Version Version
	// Phase is what the cluster is going through, for status.
	Phase string
	// Reason explains the action to a person.
	Reason string
	// Remaining is how many member changes (an add, a removal, or a replacement: both)
	// the change in progress still needs, this step included; 0 when nothing changes.
	Remaining int
}

// Phases, as status reports them: the API's, defined once there.
const (
	PhaseRunning    = v1alpha1.PhaseRunning
	PhaseScaling    = v1alpha1.PhaseScaling
	PhaseUpgrading  = v1alpha1.PhaseUpgrading
	PhaseHealing    = v1alpha1.PhaseHealing
	PhaseRenewing   = v1alpha1.PhaseRenewing
	PhaseDegraded   = v1alpha1.PhaseDegraded
	PhaseQuorumLost = v1alpha1.PhaseQuorumLost
	PhasePaused     = v1alpha1.PhasePaused
	PhaseBlocked    = v1alpha1.PhaseBlocked
)

// Quorum is the number of voters a cluster of n voters needs to make progress.
func Quorum(n int) int { return n/2 + 1 }

// Next returns the one next step that brings the cluster closer to d, or None.
func Next(d Desired, o Observed) Action {
	if d.Paused {
		return Action{Type: None, Phase: PhasePaused, Reason: "paused: the provider changes nothing until spec.forProvider.paused is false"}
	}
	p := newPlan(d, o)
	a := Action{Type: None, Phase: PhaseRunning, Reason: fmt.Sprintf("%d healthy voting members running %s", len(p.voters), d.Version)}
	for _, step := range []func() (Action, bool){
		p.quorum,
		p.orphanMachines,
		p.learner,
		p.unhealthyVoters,
		p.shape,
	} {
		if next, ok := step(); ok {
			a = next
			break
		}
	}
	a = p.withSpare(a)
	if a.Type != None && a.Type != Blocked && a.Phase != PhaseQuorumLost {
		a.Remaining = p.remaining(a.Phase)
	}
	return a
}

// spares are the machines that belong to no member and were never started.
func (p *plan) spares() []Member {
	var out []Member
	for _, m := range p.o.Members {
		if m.ID == 0 && m.Machine == MachineAllocated {
			out = append(out, m)
		}
	}
	return out
}

// withSpare makes an add use the spare machine, and deletes a spare no add needs once there is
// nothing else to do.
func (p *plan) withSpare(a Action) Action {
	spares := p.spares()
	if len(spares) == 0 {
		return a
	}
	switch a.Type {
	case AddMember:
		a.Member = spares[0].Name
		a.Reason += fmt.Sprintf(" (on machine %s, allocated by an add etcd refused)", spares[0].Name)
	case None, Blocked:
		if a.Phase == PhaseQuorumLost {
			// Without quorum nothing changes, not even this.
			return a
		}
		return Action{Type: DeleteMachine, Member: spares[0].Name, Phase: PhaseRunning,
			Reason: fmt.Sprintf("machine %s was allocated for a member no longer needed: deleting it", spares[0].Name)}
	}
	return a
}

// remaining counts the member changes the phase still needs: members to add or remove to
// reach the size asked for, and members to replace.
func (p *plan) remaining(phase string) int {
	size := len(p.voters) - p.d.Members
	if size < 0 {
		size = -size
	}
	switch phase {
	case PhaseUpgrading, PhaseRenewing:
		return max(len(p.stale()), size)
	case PhaseHealing:
		return max(len(p.unhealthy()), size, 1)
	}
	return size
}

type plan struct {
	d       Desired
	o       Observed
	voters  []Member
	healthy int
}

func newPlan(d Desired, o Observed) *plan {
	p := &plan{d: d, o: o}
	for _, m := range o.Members {
		if m.voter() {
			p.voters = append(p.voters, m)
			if m.Healthy {
				p.healthy++
			}
		}
	}
	return p
}

func (p *plan) quorum() (Action, bool) {
	n := len(p.voters)
	if n == 0 {
		return Action{Type: Blocked, Phase: PhaseQuorumLost, Reason: "the cluster has no voting members"}, true
	}
	if p.healthy < Quorum(n) {
		return Action{Type: Blocked, Phase: PhaseQuorumLost, Reason: fmt.Sprintf(
			"quorum lost: %d of %d voting members are healthy (%s not), etcd needs %d; the provider does not force a new cluster: bring the members back, or restore from a backup into a new cluster",
			p.healthy, n, strings.Join(names(p.unhealthy()), ", "), Quorum(n))}, true
	}
	if p.o.Leader == 0 {
		return Action{Type: Wait, Phase: PhaseDegraded, Reason: "no leader: waiting for an election"}, true
	}
	return Action{}, false
}

func (p *plan) orphanMachines() (Action, bool) {
	spareKept := false
	for _, m := range p.o.Members {
		if m.ID != 0 {
			continue
		}
		if m.Machine == MachineAllocated && !spareKept {
			spareKept = true
			continue
		}
		return Action{Type: DeleteMachine, Member: m.Name, Phase: p.phase(),
			Reason: fmt.Sprintf("machine %s belongs to no member (a step was interrupted): deleting it", m.Name)}, true
	}
	return Action{}, false
}

func (p *plan) learner() (Action, bool) {
	var learners []Member
	for _, m := range p.o.Members {
		if m.ID != 0 && m.Learner {
			learners = append(learners, m)
		}
	}
	if len(learners) == 0 {
		return Action{}, false
	}
	// More than one learner only happens when something other than the provider added one;
	// etcd itself refuses a second. Keep the healthiest, remove the rest.
	slices.SortStableFunc(learners, func(a, b Member) int { return boolRank(b.Healthy) - boolRank(a.Healthy) })
	if len(learners) > 1 {
		l := learners[len(learners)-1]
		return Action{Type: RemoveMember, Member: l.Name, ID: l.ID, Phase: p.phase(),
			Reason: fmt.Sprintf("removing learner %s: only one learner at a time", l.Name)}, true
	}
	l := learners[0]
	switch {
	case l.Machine == NoMachine:
		return Action{Type: RemoveMember, Member: l.Name, ID: l.ID, Phase: p.phase(),
			Reason: fmt.Sprintf("removing learner %s: its machine is gone", l.Name)}, true
	case l.Machine == MachineAllocated:
		return Action{Type: StartMember, Member: l.Name, ID: l.ID, Phase: p.phase(),
			Reason: fmt.Sprintf("starting learner %s", l.Name)}, true
	case l.Healthy:
		return Action{Type: PromoteMember, Member: l.Name, ID: l.ID, Phase: p.phase(),
			Reason: fmt.Sprintf("promoting learner %s to a voting member", l.Name)}, true
	case p.overdue(l):
		return Action{Type: RemoveMember, Member: l.Name, ID: l.ID, Phase: p.phase(),
			Reason: fmt.Sprintf("removing learner %s: not healthy for %s", l.Name, p.d.ReplaceUnhealthyAfter)}, true
	}
	return Action{Type: Wait, Member: l.Name, ID: l.ID, Phase: p.phase(), Reason: fmt.Sprintf("waiting for learner %s to start and catch up", l.Name)}, true
}

func (p *plan) unhealthyVoters() (Action, bool) {
	sick := p.unhealthy()
	if len(sick) == 0 {
		return Action{}, false
	}
	var overdue []Member
	for _, m := range sick {
		if p.overdue(m) {
			overdue = append(overdue, m)
		}
	}
	if len(overdue) == 0 {
		m := sick[0]
		return Action{Type: Wait, Phase: PhaseDegraded, Reason: fmt.Sprintf(
			"member %s is unhealthy; it is replaced if it stays so for %s (nothing else changes meanwhile)", m.Name, p.d.ReplaceUnhealthyAfter)}, true
	}
	dead := overdue[0]
	if a, ok := p.safeRemoval(dead, PhaseHealing); !ok {
		return a, true
	}
	return Action{Type: RemoveMember, Member: dead.Name, ID: dead.ID, Phase: PhaseHealing,
		Reason: fmt.Sprintf("removing member %s, unhealthy for more than %s, to replace it", dead.Name, p.d.ReplaceUnhealthyAfter)}, true
}

// shape scales and replaces stale members. Every member is healthy here and there is no
// learner.
func (p *plan) shape() (Action, bool) {
	n, want := len(p.voters), p.d.Members
	stale := p.stale()
	refused := p.refusedUpgrade()
	switch {
	case n > want:
		phase := PhaseScaling
		candidates := p.voters
		if len(stale) > 0 {
			phase, candidates = p.replacementPhase(stale), stale
		}
		return p.removeOne(candidates, phase)
	case n < want:
		phase := PhaseScaling
		if p.d.Healing {
			phase = PhaseHealing
		}
		return Action{Type: AddMember, Version: p.joinVersion(), Phase: phase,
			Reason: fmt.Sprintf("%d of %d voting members: adding one", n, want)}, true
	case len(stale) > 0:
		phase := p.replacementPhase(stale)
		return Action{Type: AddMember, Version: p.joinVersion(), Phase: phase,
			Reason: fmt.Sprintf("%s: adding a member running %s before removing %s (%d to go)", phase, p.joinVersion(), stale[0].Name, len(stale))}, true
	case refused != nil:
		return Action{Type: Blocked, Phase: PhaseBlocked, Reason: refused.Error()}, true
	}
	return Action{}, false
}

// refusedUpgrade says why the target version cannot be reached, if it cannot.
func (p *plan) refusedUpgrade() error {
	oldest, newest := p.versionRange()
	return CheckUpgradePath(oldest, newest, p.d.Version)
}

// removeOne removes one of the candidates that is not the leader, or moves leadership away
// from the leader when it is the only candidate.
func (p *plan) removeOne(candidates []Member, phase string) (Action, bool) {
	var leader *Member
	for i := range candidates {
		m := candidates[i]
		if m.ID == p.o.Leader {
			leader = &candidates[i]
			continue
		}
		if a, ok := p.safeRemoval(m, phase); !ok {
			return a, true
		}
		return Action{Type: RemoveMember, Member: m.Name, ID: m.ID, Phase: phase,
			Reason: fmt.Sprintf("removing member %s (%s)", m.Name, phaseDoing(phase))}, true
	}
	if leader == nil {
		return Action{}, false
	}
	to, ok := p.successor(*leader)
	if !ok {
		return Action{Type: Blocked, Phase: PhaseBlocked, Reason: fmt.Sprintf("member %s must go but it leads and no other healthy voter can take over", leader.Name)}, true
	}
	return Action{Type: MoveLeader, Member: to.Name, ID: to.ID, Phase: phase,
		Reason: fmt.Sprintf("moving leadership from %s to %s before removing %s", leader.Name, to.Name, leader.Name)}, true
}

// successor is the healthy voter that takes over from a leader about to be removed: one that
// runs the target version and needs no replacement, if there is one.
func (p *plan) successor(leader Member) (Member, bool) {
	var fallback *Member
	for i := range p.voters {
		m := p.voters[i]
		if m.ID == leader.ID || !m.Healthy {
			continue
		}
		if !p.isStale(m) {
			return m, true
		}
		if fallback == nil {
			fallback = &p.voters[i]
		}
	}
	if fallback != nil {
		return *fallback, true
	}
	return Member{}, false
}

// safeRemoval refuses to remove a voter when the voters left would not keep quorum.
func (p *plan) safeRemoval(m Member, phase string) (Action, bool) {
	if !m.voter() {
		return Action{}, true
	}
	left, healthyLeft := len(p.voters)-1, p.healthy
	if m.Healthy {
		healthyLeft--
	}
	if left == 0 || healthyLeft < Quorum(left) {
		return Action{Type: Blocked, Phase: phase, Reason: fmt.Sprintf(
			"not removing member %s: the %d voters left (%d healthy) would not keep quorum", m.Name, left, healthyLeft)}, false
	}
	return Action{}, true
}

func (p *plan) unhealthy() []Member {
	var out []Member
	for _, m := range p.voters {
		if !m.Healthy {
			out = append(out, m)
		}
	}
	return out
}

func (p *plan) overdue(m Member) bool {
	return !m.UnhealthySince.IsZero() && p.o.Now.Sub(m.UnhealthySince) >= p.d.ReplaceUnhealthyAfter
}

// stale returns the voters to replace, oldest version first: those running another version
// than the target, then those whose certificate is due for renewal.
func (p *plan) stale() []Member {
	var out []Member
	for _, m := range p.voters {
		if p.isStale(m) {
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b Member) int {
		if c := a.Version.Compare(b.Version); c != 0 {
			return c
		}
		return a.CertNotAfter.Compare(b.CertNotAfter)
	})
	return out
}

func (p *plan) isStale(m Member) bool {
	return m.Version != p.joinVersion() || p.certDue(m)
}

func (p *plan) certDue(m Member) bool {
	return !m.CertNotAfter.IsZero() && !p.o.Now.Add(p.d.RenewBefore).Before(m.CertNotAfter)
}

func (p *plan) replacementPhase(stale []Member) string {
	for _, m := range stale {
		if m.Version != p.joinVersion() {
			return PhaseUpgrading
		}
	}
	return PhaseRenewing
}

// joinVersion is the version new members run: the target, or, when the upgrade to the target
// is refused, what the newest member runs, so that scaling and healing never start an upgrade
// etcd does not support.
func (p *plan) joinVersion() Version {
	if p.refusedUpgrade() != nil {
		_, newest := p.versionRange()
		return newest
	}
	return p.d.Version
}

func (p *plan) versionRange() (oldest, newest Version) {
	for i, m := range p.voters {
		if i == 0 || m.Version.Compare(oldest) < 0 {
			oldest = m.Version
		}
		if i == 0 || m.Version.Compare(newest) > 0 {
			newest = m.Version
		}
	}
	return oldest, newest
}

func (p *plan) phase() string {
	switch {
	case len(p.unhealthy()) > 0:
		return PhaseHealing
	case len(p.stale()) > 0:
		return p.replacementPhase(p.stale())
	}
	return PhaseScaling
}

func phaseDoing(phase string) string {
	switch phase {
	case PhaseUpgrading:
		return "rolling upgrade"
	case PhaseRenewing:
		return "certificate renewal"
	case PhaseHealing:
		return "replacing an unhealthy member"
	}
	return "scaling in"
}

func names(ms []Member) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
