package etcdcluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/machines"
	"github.com/stackservices/provider-stackservices/internal/transfers"
)

// onSimulated is an external on the simulated backend and cluster, whose waits take no time.
func onSimulated(t *testing.T, sim *simulated) *external {
	t.Helper()
	return &external{kube: newKube(t), machines: sim, newCluster: sim.connect, record: &recorded{}, transfers: transfers.New(1),
		now: time.Now, sleep: func(context.Context, time.Duration) error { return nil }}
}

// bootstrapped is a cluster of members "db" (UID "uid") that Create bootstrapped on sim.
func bootstrapped(t *testing.T, e *external, members int32) *v1alpha1.EtcdCluster {
	t.Helper()
	cr := cluster("db", v1alpha1.EtcdClusterParameters{Version: "3.6.16", Members: members})
	cr.SetUID("uid")
	if _, err := e.Create(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	return cr
}

// converge observes and updates the cluster, as the reconciler would, until it is up to date.
func converge(t *testing.T, e *external, cr *v1alpha1.EtcdCluster) {
	t.Helper()
	ctx := context.Background()
	for i := 0; ; i++ {
		o, err := e.Observe(ctx, cr)
		if err != nil {
			t.Fatal(err)
		}
		if o.ResourceUpToDate {
			return
		}
		if i == 10 {
			t.Fatalf("still not up to date after %d updates: %s", i, cr.Status.AtProvider.NextStep)
		}
		if _, err := e.Update(ctx, cr); err != nil {
			t.Fatalf("Update() = %v", err)
		}
	}
}

// TestUpdate: Update carries out the planner's steps on the cluster until it is as the spec
// says: a scale-out adds each member as a learner, starts it into the existing cluster and
// promotes it; a scale-in removes members one at a time and deletes their machines; a cluster
// at rest is left alone and reported Available.
func TestUpdate(t *testing.T) {
	cases := map[string]struct {
		from, to    int32
		wantChanges []string
		wantVoters  []string
		wantDeleted []string
	}{
		"AtRest":   {from: 3, to: 3, wantVoters: []string{"db-0", "db-1", "db-2"}},
		"ScaleOut": {from: 1, to: 3, wantChanges: []string{"add learner https://127.0.9.2:2380", "promote db-1", "add learner https://127.0.9.3:2380", "promote db-2"}, wantVoters: []string{"db-0", "db-1", "db-2"}},
		"ScaleIn":  {from: 3, to: 1, wantChanges: []string{"remove db-1", "remove db-2"}, wantVoters: []string{"db-0"}, wantDeleted: []string{"db-1", "db-2"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sim := newSimulated()
			e := onSimulated(t, sim)
			cr := bootstrapped(t, e, tc.from)
			sim.changes = nil
			cr.Spec.ForProvider.Members = tc.to
			converge(t, e, cr)
			if diff := cmp.Diff(tc.wantChanges, sim.changes); diff != "" {
				t.Errorf("membership changes -want +got:\n%s", diff)
			}
			var voters []string
			for _, m := range sim.members {
				if !m.IsLearner {
					voters = append(voters, m.Name)
				}
			}
			slices.Sort(voters)
			if diff := cmp.Diff(tc.wantVoters, voters); diff != "" {
				t.Errorf("voters -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDeleted, sim.deleted); diff != "" {
				t.Errorf("deleted machines -want +got:\n%s", diff)
			}
			for n, cfg := range sim.started {
				if n != "db-0" && tc.to > tc.from && (cfg.InitialClusterState != "existing" || strings.Count(cfg.InitialCluster, "=https://") < 2) {
					t.Errorf("%s joined with state %q and initial cluster %q, want existing with the members before it", n, cfg.InitialClusterState, cfg.InitialCluster)
				}
			}
			if c := cr.GetCondition(xpv2.TypeReady); c.Reason != xpv2.ReasonAvailable {
				t.Errorf("Ready condition %s (%s), want Available", c.Reason, c.Message)
			}
		})
	}
}

// TestBootingMachinesAreNotJudged: a member that does not answer is unhealthy from the first
// look, unless it is a new member (a learner) whose machine may still be booting (a Nova
// server builds and boots for tens of seconds): then the clock that leads to its
// replacement has not started. A voter ran before, and gets no such time.
func TestBootingMachinesAreNotJudged(t *testing.T) {
	cases := map[string]struct {
		learner       bool
		bootingFor    time.Duration
		wantUnhealthy bool
	}{
		"AProcess":               {learner: true, wantUnhealthy: true},
		"ALearnersServerBooting": {learner: true, bootingFor: time.Hour},
		"AServerBootedAgo":       {learner: true, bootingFor: -time.Minute, wantUnhealthy: true},
		"AVoter":                 {bootingFor: time.Hour, wantUnhealthy: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			sim := newSimulated()
			now := time.Now()
			e := onSimulated(t, sim)
			e.now = func() time.Time { return now }
			cr := cluster("db", v1alpha1.EtcdClusterParameters{Version: "3.6.16", Members: 3})
			cr.SetUID("uid")
			if _, err := e.Create(ctx, cr); err != nil {
				t.Fatal(err)
			}
			// db-2 has not answered yet: its member has published no client URL.
			sim.mu.Lock()
			for i := range sim.members {
				if sim.members[i].Name == "db-2" {
					sim.members[i].ClientURLs, sim.members[i].IsLearner = nil, tc.learner
				}
			}
			if tc.bootingFor != 0 {
				sim.machines[2].BootingUntil = now.Add(tc.bootingFor)
			}
			sim.mu.Unlock()
			if _, err := e.Observe(ctx, cr); err != nil {
				t.Fatal(err)
			}
			for _, m := range cr.Status.AtProvider.Members {
				if m.Name != "db-2" {
					continue
				}
				if got := m.UnhealthySince != nil; got != tc.wantUnhealthy {
					t.Errorf("db-2 unhealthy since %v, want a time: %t", m.UnhealthySince, tc.wantUnhealthy)
				}
				return
			}
			t.Errorf("db-2 is not in the status: %+v", cr.Status.AtProvider.Members)
		})
	}
}

// TestCapacityIsCheckedFirst: a bootstrap or an add that the backend has no room for (a
// project's quota) fails before any machine is made or any learner added, with the
// backend's reason; what was done before stays.
func TestCapacityIsCheckedFirst(t *testing.T) {
	ctx := context.Background()
	sim := newSimulated()
	sim.maxRunning = 2
	e := onSimulated(t, sim)

	big := cluster("big", v1alpha1.EtcdClusterParameters{Version: "3.6.16", Members: 3})
	big.SetUID("big")
	if _, err := e.Create(ctx, big); err == nil || !strings.Contains(err.Error(), "quota: 0 machines run, 2 may, 3 more asked") {
		t.Fatalf("Create of 3 with room for 2 = %v, want the backend's refusal", err)
	}
	if len(sim.machines) != 0 {
		t.Fatalf("a refused bootstrap made %d machines", len(sim.machines))
	}

	cr := bootstrapped(t, e, 1)
	cr.Spec.ForProvider.Members = 3
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		if _, err = e.Observe(ctx, cr); err == nil {
			_, err = e.Update(ctx, cr)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "quota: 2 machines run, 2 may, 1 more asked") {
		t.Fatalf("scaling 1 to 3 with room for 2: %v, want the backend's refusal", err)
	}
	var names []string
	for _, m := range sim.machines {
		names = append(names, m.Name)
	}
	if diff := cmp.Diff([]string{"db-0", "db-1"}, names); diff != "" {
		t.Errorf("machines -want +got (no third one allocated):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"add learner https://127.0.9.2:2380", "promote db-1"}, sim.changes); diff != "" {
		t.Errorf("membership changes -want +got (no third learner):\n%s", diff)
	}
}

// TestReadinessSaysWhyAServerFailed: the cloud's fault of a member's server is in the Ready
// condition, where a person looks first.
func TestReadinessSaysWhyAServerFailed(t *testing.T) {
	ctx := context.Background()
	sim := newSimulated()
	e := onSimulated(t, sim)
	cr := bootstrapped(t, e, 3)
	sim.mu.Lock()
	for i := range sim.members {
		if sim.members[i].Name == "db-2" {
			sim.members[i].ClientURLs = nil
		}
	}
	sim.machines[2].State = machines.Stopped
	sim.machines[2].Server = &machines.Server{ID: "s-2", Status: "ERROR", Fault: "No valid host was found. There are not enough hosts available."}
	sim.mu.Unlock()
	if _, err := e.Observe(ctx, cr); err != nil {
		t.Fatal(err)
	}
	c := cr.GetCondition(xpv2.TypeReady)
	if want := "server of db-2 is ERROR: No valid host was found. There are not enough hosts available."; c.Status == "True" || !strings.Contains(c.Message, want) {
		t.Errorf("Ready %s: %q, want it false and saying %q", c.Status, c.Message, want)
	}
}

// TestALearnerFromASnapshotIsNudged: a learner that joined from the leader's snapshot says
// nothing until an entry after that snapshot is applied; on a cluster nobody writes to, the
// provider's nudge is that entry, and the scale-out finishes.
func TestALearnerFromASnapshotIsNudged(t *testing.T) {
	sim := newSimulated()
	e := onSimulated(t, sim)
	cr := bootstrapped(t, e, 1)
	sim.fromSnapshot = true
	cr.Spec.ForProvider.Members = 3
	converge(t, e, cr)
	if sim.nudges == 0 {
		t.Error("the learners were never nudged")
	}
	if diff := cmp.Diff([]string{"add learner https://127.0.9.2:2380", "promote db-1", "add learner https://127.0.9.3:2380", "promote db-2"}, sim.changes); diff != "" {
		t.Errorf("membership changes -want +got:\n%s", diff)
	}
}
