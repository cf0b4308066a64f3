package etcd

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var (
	v35 = MustParseVersion("3.5.35")
	v36 = MustParseVersion("3.6.16")
	v37 = MustParseVersion("3.7.3")

	now       = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	threshold = 2 * time.Minute
)

func healthy(name string, id uint64, v Version) Member {
	return Member{Name: name, ID: id, Machine: MachineRunning, Healthy: true, Version: v, CertNotAfter: now.Add(365 * 24 * time.Hour)}
}

// down is m unhealthy (its process gone) since the given time before now.
func down(m Member, since time.Duration) Member {
	m.Healthy, m.Machine, m.UnhealthySince = false, MachineStopped, now.Add(-since)
	return m
}

func learner(m Member) Member {
	m.Learner = true
	return m
}

func desired(members int, v Version) Desired {
	return Desired{Members: members, Version: v, ReplaceUnhealthyAfter: threshold, RenewBefore: 30 * 24 * time.Hour}
}

func three(v Version) []Member {
	return []Member{healthy("a", 1, v), healthy("b", 2, v), healthy("c", 3, v)}
}

// want is the part of an Action the tests pin down; Reason is checked for being present.
type want struct {
	Type    ActionType
	Member  string
	ID      uint64
	Version Version
	Phase   string
}

func TestNext(t *testing.T) {
	cases := map[string]struct {
		d    Desired
		o    Observed
		want want
	}{
		"PausedChangesNothing": {
			d:    func() Desired { d := desired(5, v36); d.Paused = true; return d }(),
			o:    Observed{Members: three(v36), Leader: 1},
			want: want{Type: None, Phase: PhasePaused},
		},
		"SteadyState": {
			d:    desired(3, v36),
			o:    Observed{Members: three(v36), Leader: 1},
			want: want{Type: None, Phase: PhaseRunning},
		},
		"NoLeaderWaits": {
			d:    desired(3, v36),
			o:    Observed{Members: three(v36)},
			want: want{Type: Wait, Phase: PhaseDegraded},
		},
		"QuorumLostBlocks": {
			d:    desired(3, v36),
			o:    Observed{Members: []Member{healthy("a", 1, v36), down(healthy("b", 2, v36), time.Hour), down(healthy("c", 3, v36), time.Hour)}, Leader: 0},
			want: want{Type: Blocked, Phase: PhaseQuorumLost},
		},
		"LearnersDoNotCountTowardsQuorum": {
			d: desired(3, v36),
			o: Observed{Members: []Member{healthy("a", 1, v36), down(healthy("b", 2, v36), time.Hour), down(healthy("c", 3, v36), time.Hour),
				learner(healthy("d", 4, v36))}, Leader: 1},
			want: want{Type: Blocked, Phase: PhaseQuorumLost},
		},
		"SingleMemberDownIsQuorumLost": {
			d:    desired(1, v36),
			o:    Observed{Members: []Member{down(healthy("a", 1, v36), time.Hour)}},
			want: want{Type: Blocked, Phase: PhaseQuorumLost},
		},
		"UnhealthyWithinThresholdWaits": {
			d:    desired(5, v36),
			o:    Observed{Members: []Member{healthy("a", 1, v36), healthy("b", 2, v36), down(healthy("c", 3, v36), 10*time.Second)}, Leader: 1},
			want: want{Type: Wait, Phase: PhaseDegraded},
		},
		"UnhealthyPastThresholdIsRemovedToBeReplaced": {
			d:    desired(3, v36),
			o:    Observed{Members: []Member{healthy("a", 1, v36), healthy("b", 2, v36), down(healthy("c", 3, v36), 3*time.Minute)}, Leader: 1},
			want: want{Type: RemoveMember, Member: "c", ID: 3, Phase: PhaseHealing},
		},
		"ReplacementJoinsOnceTheDeadMemberIsGone": {
			d:    func() Desired { d := desired(3, v36); d.Healing = true; return d }(),
			o:    Observed{Members: []Member{healthy("a", 1, v36), healthy("b", 2, v36)}, Leader: 1},
			want: want{Type: AddMember, Version: v36, Phase: PhaseHealing},
		},
		"ReplacedMemberIsRemoved": {
			d: desired(3, v36),
			o: Observed{Members: []Member{healthy("a", 1, v36), healthy("b", 2, v36), down(healthy("c", 3, v36), 3*time.Minute),
				healthy("d", 4, v36)}, Leader: 1},
			want: want{Type: RemoveMember, Member: "c", ID: 3, Phase: PhaseHealing},
		},
		"UnhealthyMemberOfAnOversizedClusterIsRemovedWithoutReplacement": {
			d:    desired(1, v36),
			o:    Observed{Members: []Member{healthy("a", 1, v36), healthy("b", 2, v36), down(healthy("c", 3, v36), 3*time.Minute)}, Leader: 1},
			want: want{Type: RemoveMember, Member: "c", ID: 3, Phase: PhaseHealing},
		},
		"ReplacementOfADeadMemberNeverStartsARefusedUpgrade": {
			d:    desired(3, v37),
			o:    Observed{Members: []Member{healthy("a", 1, v35), healthy("b", 2, v35)}, Leader: 1},
			want: want{Type: AddMember, Version: v35, Phase: PhaseScaling},
		},
		"RefusedUpgradeBlocksOnceTheSizeIsRight": {
			d:    desired(3, v37),
			o:    Observed{Members: three(v35), Leader: 1},
			want: want{Type: Blocked, Phase: PhaseBlocked},
		},
		"ScaleInDuringARefusedUpgrade": {
			d:    desired(1, v37),
			o:    Observed{Members: three(v35), Leader: 1},
			want: want{Type: RemoveMember, Member: "b", ID: 2, Phase: PhaseScaling},
		},
		"DeadMemberIsNotRemovedWhenTheRestWouldLoseQuorum": {
			d: desired(5, v36),
			o: Observed{Members: []Member{healthy("a", 1, v36), healthy("b", 2, v36), healthy("c", 3, v36), down(healthy("d", 4, v36), time.Hour),
				down(healthy("e", 5, v36), time.Hour)}, Leader: 1},
			want: want{Type: RemoveMember, Member: "d", ID: 4, Phase: PhaseHealing},
		},
		"NoScalingWhileDegraded": {
			d:    desired(5, v36),
			o:    Observed{Members: []Member{healthy("a", 1, v36), healthy("b", 2, v36), down(healthy("c", 3, v36), time.Second)}, Leader: 1},
			want: want{Type: Wait, Phase: PhaseDegraded},
		},
		"OrphanMachineIsDeleted": {
			d:    desired(3, v36),
			o:    Observed{Members: append(three(v36), Member{Name: "d", Machine: MachineStopped, Version: v36}), Leader: 1},
			want: want{Type: DeleteMachine, Member: "d", Phase: PhaseScaling},
		},
		// An add etcd refused leaves its machine allocated: the retry reuses it (same
		// machine, same name) instead of deleting it and allocating another.
		"SpareIsReusedByTheNextAdd": {
			d:    desired(5, v36),
			o:    Observed{Members: append(three(v36), Member{Name: "d", Machine: MachineAllocated}), Leader: 1},
			want: want{Type: AddMember, Member: "d", Version: v36, Phase: PhaseScaling},
		},
		"SpareNoAddNeedsIsDeleted": {
			d:    desired(3, v36),
			o:    Observed{Members: append(three(v36), Member{Name: "d", Machine: MachineAllocated}), Leader: 1},
			want: want{Type: DeleteMachine, Member: "d", Phase: PhaseRunning},
		},
		"OnlyOneSpareIsKept": {
			d:    desired(5, v36),
			o:    Observed{Members: append(three(v36), Member{Name: "d", Machine: MachineAllocated}, Member{Name: "e", Machine: MachineAllocated}), Leader: 1},
			want: want{Type: DeleteMachine, Member: "e", Phase: PhaseScaling},
		},
		"SpareWaitsOutAnElection": {
			d:    desired(5, v36),
			o:    Observed{Members: append(three(v36), Member{Name: "d", Machine: MachineAllocated})},
			want: want{Type: Wait, Phase: PhaseDegraded},
		},
		"UnstartedLearnerIsStarted": {
			d: desired(5, v36),
			o: Observed{Members: append(three(v36), Member{Name: "d", ID: 4, Learner: true, Machine: MachineAllocated, Version: v36}),
				Leader: 1},
			want: want{Type: StartMember, Member: "d", ID: 4, Phase: PhaseScaling},
		},
		"HealthyLearnerIsPromoted": {
			d:    desired(5, v36),
			o:    Observed{Members: append(three(v36), learner(healthy("d", 4, v36))), Leader: 1},
			want: want{Type: PromoteMember, Member: "d", ID: 4, Phase: PhaseScaling},
		},
		"StartingLearnerIsWaitedFor": {
			d: desired(5, v36),
			o: Observed{Members: append(three(v36), Member{Name: "d", ID: 4, Learner: true, Machine: MachineRunning, Version: v36,
				UnhealthySince: now.Add(-5 * time.Second)}), Leader: 1},
			want: want{Type: Wait, Member: "d", ID: 4, Phase: PhaseScaling},
		},
		"LearnerThatNeverBecomesHealthyIsRemoved": {
			d:    desired(5, v36),
			o:    Observed{Members: append(three(v36), learner(down(healthy("d", 4, v36), 5*time.Minute))), Leader: 1},
			want: want{Type: RemoveMember, Member: "d", ID: 4, Phase: PhaseScaling},
		},
		"LearnerWithoutMachineIsRemoved": {
			d:    desired(5, v36),
			o:    Observed{Members: append(three(v36), Member{Name: "d", ID: 4, Learner: true, Version: v36}), Leader: 1},
			want: want{Type: RemoveMember, Member: "d", ID: 4, Phase: PhaseScaling},
		},
		"OnlyOneLearnerAtATime": {
			d: desired(5, v36),
			o: Observed{Members: append(three(v36), learner(down(healthy("d", 4, v36), time.Second)), learner(healthy("e", 5, v36))),
				Leader: 1},
			want: want{Type: RemoveMember, Member: "d", ID: 4, Phase: PhaseScaling},
		},
		"NothingElseHappensWhileALearnerCatchesUp": {
			d: desired(3, v37),
			o: Observed{Members: append(three(v36), Member{Name: "d", ID: 4, Learner: true, Machine: MachineRunning, Version: v37,
				UnhealthySince: now.Add(-time.Second)}), Leader: 1},
			want: want{Type: Wait, Member: "d", ID: 4, Phase: PhaseUpgrading},
		},
		"ScaleOutOneAtATime": {
			d:    desired(5, v36),
			o:    Observed{Members: three(v36), Leader: 1},
			want: want{Type: AddMember, Version: v36, Phase: PhaseScaling},
		},
		"ScaleOutFromOne": {
			d:    desired(3, v36),
			o:    Observed{Members: []Member{healthy("a", 1, v36)}, Leader: 1},
			want: want{Type: AddMember, Version: v36, Phase: PhaseScaling},
		},
		"ScaleInRemovesANonLeader": {
			d:    desired(3, v36),
			o:    Observed{Members: append(three(v36), healthy("d", 4, v36), healthy("e", 5, v36)), Leader: 1},
			want: want{Type: RemoveMember, Member: "b", ID: 2, Phase: PhaseScaling},
		},
		"ScaleInToOne": {
			d:    desired(1, v36),
			o:    Observed{Members: []Member{healthy("a", 1, v36), healthy("b", 2, v36)}, Leader: 2},
			want: want{Type: RemoveMember, Member: "a", ID: 1, Phase: PhaseScaling},
		},
		"UpgradeStartsWithAMemberOfTheNewVersion": {
			d:    desired(3, v36),
			o:    Observed{Members: three(v35), Leader: 1},
			want: want{Type: AddMember, Version: v36, Phase: PhaseUpgrading},
		},
		"UpgradeRemovesAnOldFollowerOnceTheNewMemberVotes": {
			d:    desired(3, v36),
			o:    Observed{Members: append(three(v35), healthy("d", 4, v36)), Leader: 1},
			want: want{Type: RemoveMember, Member: "b", ID: 2, Phase: PhaseUpgrading},
		},
		"UpgradeMovesLeadershipOffTheLastOldMember": {
			d: desired(3, v36),
			o: Observed{Members: []Member{healthy("a", 1, v35), healthy("d", 4, v36), healthy("e", 5, v36), healthy("f", 6, v36)},
				Leader: 1},
			want: want{Type: MoveLeader, Member: "d", ID: 4, Phase: PhaseUpgrading},
		},
		"UpgradeRemovesTheLastOldMemberOnceItNoLongerLeads": {
			d: desired(3, v36),
			o: Observed{Members: []Member{healthy("a", 1, v35), healthy("d", 4, v36), healthy("e", 5, v36), healthy("f", 6, v36)},
				Leader: 4},
			want: want{Type: RemoveMember, Member: "a", ID: 1, Phase: PhaseUpgrading},
		},
		"UpgradeOfASingleMember": {
			d:    desired(1, v36),
			o:    Observed{Members: []Member{healthy("a", 1, v35)}, Leader: 1},
			want: want{Type: AddMember, Version: v36, Phase: PhaseUpgrading},
		},
		"UpgradeOfASingleMemberHandsOverLeadership": {
			d:    desired(1, v36),
			o:    Observed{Members: []Member{healthy("a", 1, v35), healthy("b", 2, v36)}, Leader: 1},
			want: want{Type: MoveLeader, Member: "b", ID: 2, Phase: PhaseUpgrading},
		},
		"UpgradeWhileScalingInRemovesOldMembersFirst": {
			d: desired(3, v36),
			o: Observed{Members: []Member{healthy("a", 1, v36), healthy("b", 2, v35), healthy("c", 3, v36), healthy("d", 4, v36),
				healthy("e", 5, v36)}, Leader: 1},
			want: want{Type: RemoveMember, Member: "b", ID: 2, Phase: PhaseUpgrading},
		},
		"DowngradeIsRefused": {
			d:    desired(3, v35),
			o:    Observed{Members: three(v36), Leader: 1},
			want: want{Type: Blocked, Phase: PhaseBlocked},
		},
		"PatchDowngradeIsRefused": {
			d:    desired(3, MustParseVersion("3.6.10")),
			o:    Observed{Members: three(v36), Leader: 1},
			want: want{Type: Blocked, Phase: PhaseBlocked},
		},
		"TwoMinorJumpIsRefused": {
			d:    desired(3, v37),
			o:    Observed{Members: three(v35), Leader: 1},
			want: want{Type: Blocked, Phase: PhaseBlocked},
		},
		// etcd's rule is one minor at a time across the cluster: the 3.5 member is replaced by
		// a 3.6 one first, and only a cluster all on 3.6 takes 3.7 members.
		"MixedClusterFinishesItsUpgradeFirst": {
			d:    desired(3, v37),
			o:    Observed{Members: []Member{healthy("a", 1, v35), healthy("b", 2, v36), healthy("c", 3, v36)}, Leader: 2},
			want: want{Type: AddMember, Version: v36, Phase: PhaseUpgrading},
		},
		"PatchUpgradeIsARollingReplacement": {
			d:    desired(3, MustParseVersion("3.6.20")),
			o:    Observed{Members: three(v36), Leader: 1},
			want: want{Type: AddMember, Version: MustParseVersion("3.6.20"), Phase: PhaseUpgrading},
		},
		"ExpiringCertificateIsRenewedByReplacement": {
			d: desired(3, v36),
			o: Observed{Members: func() []Member {
				ms := three(v36)
				ms[1].CertNotAfter = now.Add(24 * time.Hour)
				return ms
			}(), Leader: 1},
			want: want{Type: AddMember, Version: v36, Phase: PhaseRenewing},
		},
		"RenewalRemovesTheMemberWithTheExpiringCertificate": {
			d: desired(3, v36),
			o: Observed{Members: func() []Member {
				ms := append(three(v36), healthy("d", 4, v36))
				ms[2].CertNotAfter = now.Add(24 * time.Hour)
				return ms
			}(), Leader: 1},
			want: want{Type: RemoveMember, Member: "c", ID: 3, Phase: PhaseRenewing},
		},
		"UnknownCertificateExpiryIsNotRenewed": {
			d: desired(3, v36),
			o: Observed{Members: func() []Member {
				ms := three(v36)
				ms[0].CertNotAfter = time.Time{}
				return ms
			}(), Leader: 1},
			want: want{Type: None, Phase: PhaseRunning},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.o.Now = now
			got := Next(tc.d, tc.o)
			if got.Reason == "" {
				t.Errorf("Next(...): action %s has no reason", got.Type)
			}
			if diff := cmp.Diff(tc.want, want{Type: got.Type, Member: got.Member, ID: got.ID, Version: got.Version, Phase: got.Phase}); diff != "" {
				t.Errorf("Next(...): -want, +got:\n%s\nreason: %s", diff, got.Reason)
			}
		})
	}
}

// TestRemaining checks that status can say how far a multi-step change is.
func TestRemaining(t *testing.T) {
	old := func(name string, id uint64) Member { return healthy(name, id, v35) }
	cases := map[string]struct {
		d    Desired
		o    Observed
		want int
	}{
		"AsDesired":      {d: desired(3, v36), o: Observed{Members: three(v36), Leader: 1}, want: 0},
		"ScaleOutByTwo":  {d: desired(5, v36), o: Observed{Members: three(v36), Leader: 1}, want: 2},
		"ScaleInByTwo":   {d: desired(1, v36), o: Observed{Members: three(v36), Leader: 1}, want: 2},
		"UpgradeOfThree": {d: desired(3, v36), o: Observed{Members: []Member{old("a", 1), old("b", 2), old("c", 3)}, Leader: 1}, want: 3},
		"UpgradeHalfWay": {d: desired(3, v36), o: Observed{Members: []Member{old("a", 1), healthy("b", 2, v36), healthy("c", 3, v36), healthy("d", 4, v36)}, Leader: 1}, want: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.o.Now = now
			got := Next(tc.d, tc.o)
			if got.Remaining != tc.want {
				t.Errorf("Next(...).Remaining = %d, want %d (action %s: %s)", got.Remaining, tc.want, got.Type, got.Reason)
			}
		})
	}
}

// TestNextIsAlwaysSafe enumerates cluster states (1 to 6 voters, each healthy, freshly down or
// down for long, with and without a learner, every leader, several targets) and checks the
// invariants no single step may break, whatever the state.
func TestNextIsAlwaysSafe(t *testing.T) {
	health := []func(Member) Member{
		func(m Member) Member { return m },
		func(m Member) Member { return down(m, time.Second) },
		func(m Member) Member { return down(m, time.Hour) },
	}
	learners := []*Member{
		nil,
		func() *Member { m := learner(healthy("l", 100, v36)); return &m }(),
		func() *Member { m := learner(down(healthy("l", 100, v36), time.Hour)); return &m }(),
	}
	states := 0
	for n := 1; n <= 6; n++ {
		combos := 1
		for range n {
			combos *= len(health)
		}
		for c := range combos {
			voters := make([]Member, n)
			for i := range n {
				h := health[(c/pow(len(health), i))%len(health)]
				v := v36
				if i%2 == 1 {
					v = v35
				}
				voters[i] = h(healthy(fmt.Sprintf("m%d", i), uint64(i+1), v))
			}
			for _, l := range learners {
				for leader := 0; leader <= n; leader++ {
					for _, d := range []Desired{desired(1, v36), desired(3, v36), desired(5, v36), desired(3, v37), desired(3, v35)} {
						members := append([]Member(nil), voters...)
						if l != nil {
							members = append(members, *l)
						}
						o := Observed{Members: members, Now: now}
						if leader > 0 && voters[leader-1].Healthy {
							o.Leader = uint64(leader)
						}
						checkSafe(t, d, o, Next(d, o))
						states++
					}
				}
			}
		}
	}
	t.Logf("checked %d cluster states", states)
}

func checkSafe(t *testing.T, d Desired, o Observed, a Action) {
	t.Helper()
	var voters, healthyVoters, learners int
	byID := map[uint64]Member{}
	for _, m := range o.Members {
		byID[m.ID] = m
		switch {
		case m.Learner:
			learners++
		case m.ID != 0:
			voters++
			if m.Healthy {
				healthyVoters++
			}
		}
	}
	fail := func(why string) {
		t.Helper()
		t.Fatalf("%s\ndesired: %+v\nobserved: %+v\naction: %+v", why, d, o, a)
	}
	if a.Reason == "" {
		fail("an action without a reason")
	}
	if healthyVoters < Quorum(voters) && a.Type != Blocked {
		fail("acted without quorum")
	}
	switch a.Type {
	case AddMember:
		if learners > 0 {
			fail("added a member while a learner exists")
		}
		oldest, newest := Version{}, Version{}
		for i, m := range o.Members {
			if m.Learner {
				continue
			}
			if i == 0 || m.Version.Compare(oldest) < 0 {
				oldest = m.Version
			}
			if i == 0 || m.Version.Compare(newest) > 0 {
				newest = m.Version
			}
		}
		if err := CheckUpgradePath(oldest, newest, a.Version); err != nil {
			fail("added a member of a version etcd cannot take: " + err.Error())
		}
	case RemoveMember:
		m := byID[a.ID]
		if m.ID == o.Leader {
			fail("removed the leader")
		}
		if !m.Learner {
			left, healthyLeft := voters-1, healthyVoters
			if m.Healthy {
				healthyLeft--
			}
			if left == 0 || healthyLeft < Quorum(left) {
				fail("a removal that breaks quorum")
			}
			if m.Healthy && healthyVoters < voters {
				fail("removed a healthy voter while another is unhealthy")
			}
		}
	case MoveLeader:
		to := byID[a.ID]
		if !to.Healthy || to.Learner || to.ID == o.Leader {
			fail("moved leadership to a member that cannot lead")
		}
	case PromoteMember:
		if !byID[a.ID].Learner || !byID[a.ID].Healthy {
			fail("promoted a member that is not a healthy learner")
		}
	}
}

func pow(b, e int) int {
	r := 1
	for range e {
		r *= b
	}
	return r
}

func TestCheckUpgradePath(t *testing.T) {
	cases := map[string]struct {
		oldest, newest, target Version
		ok                     bool
	}{
		"Same":             {v36, v36, v36, true},
		"Patch":            {v36, v36, MustParseVersion("3.6.20"), true},
		"NextMinor":        {v35, v35, v36, true},
		"TwoMinors":        {v35, v35, v37, false},
		"Downgrade":        {v36, v36, v35, false},
		"MixedContinues":   {v35, v36, v36, true},
		"MixedTooFar":      {v35, v36, v37, false},
		"MixedBackwards":   {v35, v36, v35, false},
		"OtherMajor":       {v36, v36, MustParseVersion("4.0.0"), false},
		"PatchDowngrade":   {v36, v36, MustParseVersion("3.6.1"), false},
		"MinorWithPatches": {MustParseVersion("3.5.0"), MustParseVersion("3.5.0"), MustParseVersion("3.6.99"), true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := CheckUpgradePath(tc.oldest, tc.newest, tc.target)
			if (err == nil) != tc.ok {
				t.Errorf("CheckUpgradePath(%s, %s, %s) = %v, want ok=%t", tc.oldest, tc.newest, tc.target, err, tc.ok)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    Version
		wantErr bool
	}{
		"Plain":     {in: "3.6.16", want: Version{3, 6, 16}},
		"LeadingV":  {in: "v3.5.35", want: Version{3, 5, 35}},
		"TwoParts":  {in: "3.6", wantErr: true},
		"Letters":   {in: "3.6.x", wantErr: true},
		"Negative":  {in: "3.-1.0", wantErr: true},
		"PreRelase": {in: "3.6.0-rc.1", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseVersion(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseVersion(%q) error = %v, wantErr %t", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateComparable(Version{})); diff != "" {
				t.Errorf("ParseVersion(%q): -want, +got:\n%s", tc.in, diff)
			}
		})
	}
}
