package etcdcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/internal/etcd"
	"github.com/stackservices/provider-stackservices/internal/etcd/backup"
)

func TestParseSchedule(t *testing.T) {
	from := time.Date(2026, 11, 24, 10, 7, 0, 0, time.UTC)
	cases := map[string]struct {
		schedule string
		next     time.Time
		wantErr  string
	}{
		"Cron":          {schedule: "0 */6 * * *", next: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)},
		"Hourly":        {schedule: "@hourly", next: time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC)},
		"Every":         {schedule: "@every 5s", next: from.Add(5 * time.Second)},
		"EveryTooOften": {schedule: "@every 1s", wantErr: "more often than every 5s"},
		"SecondsField":  {schedule: "*/2 * * * * *", wantErr: "is not a schedule"},
		"Garbage":       {schedule: "every day at noon", wantErr: "is not a schedule"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := parseSchedule(tc.schedule)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseSchedule(%q) = %v, want an error with %q", tc.schedule, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Next(from); !got.Equal(tc.next) {
				t.Errorf("Next(%s) = %s, want %s", from, got, tc.next)
			}
		})
	}
}

func TestBackupMember(t *testing.T) {
	m := func(name string, id uint64, healthy, learner bool) member {
		return member{plan: etcd.Member{Name: name, ID: id, Healthy: healthy, Learner: learner}, clientURL: "https://" + name}
	}
	cases := map[string]struct {
		o       observation
		want    string
		wantErr string
	}{
		"AFollower":          {o: observation{leader: 1, members: []member{m("a", 1, true, false), m("b", 2, true, false)}}, want: "b"},
		"NotALearner":        {o: observation{leader: 1, members: []member{m("a", 1, true, false), m("b", 2, true, true)}}, want: "a"},
		"NotAnUnhealthyOne":  {o: observation{leader: 1, members: []member{m("a", 1, true, false), m("b", 2, false, false), m("c", 3, true, false)}}, want: "c"},
		"TheLeaderWhenAlone": {o: observation{leader: 1, members: []member{m("a", 1, true, false)}}, want: "a"},
		"NoLeader":           {o: observation{members: []member{m("a", 1, true, false)}}, wantErr: errNoLeader},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := backupMember(&tc.o)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("backupMember() = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.plan.Name != tc.want {
				t.Errorf("backupMember() = %q, %v; want %q", got.plan.Name, err, tc.want)
			}
		})
	}
}

// recorder records the reasons of the events the controller sends.
type recorder struct{ got *[]string }

func (r recorder) Event(_ runtime.Object, ev event.Event)   { *r.got = append(*r.got, string(ev.Reason)) }
func (r recorder) WithAnnotations(...string) event.Recorder { return r }

func TestObserveBackups(t *testing.T) {
	created := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	t1 := created.Add(5 * time.Second)
	t2 := created.Add(10 * time.Second)
	mt := func(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
	taken := backup.Metadata{Key: "p/a.snapshot", Member: "m-1", Size: 10, Revision: 3, SHA256: "ab", Time: t1}

	cases := map[string]struct {
		schedule string
		status   *v1alpha1.BackupObservation
		result   *backupResult
		running  bool
		atRest   bool
		now      time.Time
		want     *v1alpha1.BackupObservation
		due      bool
		events   []string
	}{
		"FirstIsDueOneIntervalAfterCreation": {
			now:  t1,
			want: &v1alpha1.BackupObservation{NextScheduledTime: mt(t1)},
			due:  true,
		},
		"NotDueYet": {
			now:  t1.Add(-time.Second),
			want: &v1alpha1.BackupObservation{NextScheduledTime: mt(t1)},
		},
		"AtRestEndsTheWaitOfAChange": {
			status: &v1alpha1.BackupObservation{ChangeWaitingSince: mt(t1)},
			atRest: true,
			now:    t1.Add(-time.Second),
			want:   &v1alpha1.BackupObservation{NextScheduledTime: mt(t1)},
		},
		"ChangingKeepsTheWait": {
			status: &v1alpha1.BackupObservation{ChangeWaitingSince: mt(t1)},
			now:    t1.Add(-time.Second),
			want:   &v1alpha1.BackupObservation{ChangeWaitingSince: mt(t1), NextScheduledTime: mt(t1)},
		},
		"RunningIsNotDue": {
			status:  &v1alpha1.BackupObservation{LastAttemptTime: mt(t1)},
			running: true,
			now:     t2.Add(time.Minute),
			want:    &v1alpha1.BackupObservation{LastAttemptTime: mt(t1), State: v1alpha1.BackupRunning},
		},
		"SuccessReported": {
			status: &v1alpha1.BackupObservation{LastAttemptTime: mt(t1), State: v1alpha1.BackupFailing, Reason: "earlier", ConsecutiveFailures: 2},
			result: &backupResult{started: t1, taken: taken, stored: []backup.Metadata{taken}},
			now:    t1.Add(time.Second),
			want: &v1alpha1.BackupObservation{
				LastAttemptTime: mt(t1), LastSuccessTime: mt(t1), State: v1alpha1.BackupHealthy, NextScheduledTime: mt(t2),
				Stored: []v1alpha1.StoredBackup{{Key: "p/a.snapshot", Time: metav1.Time{Time: t1}, Revision: 3, Size: 10, SHA256: "ab"}},
			},
			events: []string{"BackedUp"},
		},
		"SuccessReportedOnce": {
			status: &v1alpha1.BackupObservation{LastAttemptTime: mt(t1), LastSuccessTime: mt(t1), State: v1alpha1.BackupHealthy},
			result: &backupResult{started: t1, taken: taken, stored: []backup.Metadata{taken}},
			now:    t1.Add(time.Second),
			want:   &v1alpha1.BackupObservation{LastAttemptTime: mt(t1), LastSuccessTime: mt(t1), State: v1alpha1.BackupHealthy, NextScheduledTime: mt(t2)},
		},
		"FailureCountsOnce": {
			status: &v1alpha1.BackupObservation{LastAttemptTime: mt(t1), LastFailureTime: mt(t1), State: v1alpha1.BackupFailing, Reason: "boom", ConsecutiveFailures: 1},
			result: &backupResult{started: t1, err: errors.New("boom")},
			now:    t2,
			want:   &v1alpha1.BackupObservation{LastAttemptTime: mt(t1), LastFailureTime: mt(t1), State: v1alpha1.BackupFailing, Reason: "boom", ConsecutiveFailures: 1, NextScheduledTime: mt(t2)},
			due:    true,
		},
		// Status keeps whole seconds: a result with nanoseconds is the attempt it recorded.
		"RoundTripDoesNotReportAgain": {
			status: &v1alpha1.BackupObservation{LastAttemptTime: mt(t1), LastFailureTime: mt(t1), State: v1alpha1.BackupFailing, Reason: "boom", ConsecutiveFailures: 1},
			result: &backupResult{started: t1.Add(300 * time.Millisecond), err: errors.New("boom")},
			now:    t1.Add(time.Second),
			want:   &v1alpha1.BackupObservation{LastAttemptTime: mt(t1), LastFailureTime: mt(t1), State: v1alpha1.BackupFailing, Reason: "boom", ConsecutiveFailures: 1, NextScheduledTime: mt(t2)},
		},
		"FailedDailyIsRetriedSoon": {
			schedule: "@daily",
			status:   &v1alpha1.BackupObservation{LastAttemptTime: mt(t1), LastFailureTime: mt(t1), State: v1alpha1.BackupFailing, Reason: "no bucket", ConsecutiveFailures: 3},
			now:      t1.Add(time.Minute),
			want:     &v1alpha1.BackupObservation{LastAttemptTime: mt(t1), LastFailureTime: mt(t1), State: v1alpha1.BackupFailing, Reason: "no bucket", ConsecutiveFailures: 3, NextScheduledTime: mt(t1.Add(2 * time.Minute))},
		},
		"SameFailureAgainCounts": {
			status: &v1alpha1.BackupObservation{LastAttemptTime: mt(t2), LastFailureTime: mt(t1), State: v1alpha1.BackupFailing, Reason: "boom", ConsecutiveFailures: 1},
			result: &backupResult{started: t2, err: errors.New("boom")},
			now:    t2.Add(time.Second),
			want:   &v1alpha1.BackupObservation{LastAttemptTime: mt(t2), LastFailureTime: mt(t2), State: v1alpha1.BackupFailing, Reason: "boom", ConsecutiveFailures: 2, NextScheduledTime: mt(t2.Add(5 * time.Second))},
			events: []string{"BackupFailed"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			schedule := tc.schedule
			if schedule == "" {
				schedule = "@every 5s"
			}
			cr := cluster("a", v1alpha1.EtcdClusterParameters{Backup: &v1alpha1.Backup{Schedule: schedule}})
			cr.SetUID(types.UID("uid"))
			cr.SetCreationTimestamp(metav1.Time{Time: created})
			cr.Status.AtProvider.Backup = tc.status
			b := newBackups(1, nil, nil)
			if tc.result != nil {
				b.results["uid"] = *tc.result
			}
			if tc.running {
				b.running["uid"] = &runningJob{cancel: func() {}}
			}
			var got []string
			e := &external{backups: b, record: recorder{got: &got}, now: func() time.Time { return tc.now }}
			due := e.observeBackups(cr, tc.atRest)
			if due != tc.due {
				t.Errorf("due = %t, want %t", due, tc.due)
			}
			if diff := cmp.Diff(tc.want, cr.Status.AtProvider.Backup); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.events, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChangeNeedsBackup(t *testing.T) {
	voters := func(n int) []member {
		ms := make([]member, n)
		for i := range ms {
			ms[i] = member{plan: etcd.Member{ID: uint64(i + 1)}}
		}
		return ms
	}
	cases := map[string]struct {
		members int
		want    int
		next    etcd.Action
		needs   bool
	}{
		"Upgrade":            {members: 3, want: 3, next: etcd.Action{Type: etcd.AddMember, Phase: etcd.PhaseUpgrading}, needs: true},
		"CertificateRoll":    {members: 3, want: 3, next: etcd.Action{Type: etcd.RemoveMember, Phase: etcd.PhaseRenewing}, needs: true},
		"ScaleIn":            {members: 5, want: 3, next: etcd.Action{Type: etcd.MoveLeader, Phase: etcd.PhaseScaling}, needs: true},
		"ScaleOut":           {members: 3, want: 5, next: etcd.Action{Type: etcd.AddMember, Phase: etcd.PhaseScaling}},
		"Healing":            {members: 3, want: 3, next: etcd.Action{Type: etcd.RemoveMember, Phase: etcd.PhaseHealing}},
		"WaitingInAnUpgrade": {members: 3, want: 3, next: etcd.Action{Type: etcd.Wait, Phase: etcd.PhaseUpgrading}},
		"AtRest":             {members: 3, want: 3, next: etcd.Action{Type: etcd.None, Phase: etcd.PhaseRunning}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := &observation{members: voters(tc.members), next: tc.next}
			if got := changeNeedsBackup(etcd.Desired{Members: tc.want}, o); got != tc.needs {
				t.Errorf("changeNeedsBackup() = %t, want %t", got, tc.needs)
			}
		})
	}
}

func TestBackupFirst(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	mt := func(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
	upgrade := &observation{members: []member{{plan: etcd.Member{ID: 1}}}, next: etcd.Action{Type: etcd.AddMember, Phase: etcd.PhaseUpgrading, Reason: "upgrade"}}
	cases := map[string]struct {
		beforeChanges *bool
		status        *v1alpha1.BackupObservation
		running       bool
		wait          bool
		waitingSince  *metav1.Time
	}{
		"Off":                 {beforeChanges: ptr.To(false), status: &v1alpha1.BackupObservation{}},
		"FreshBackupLetsItGo": {status: &v1alpha1.BackupObservation{ChangeWaitingSince: mt(t0), LastSuccessTime: mt(t0.Add(time.Second))}, waitingSince: mt(t0)},
		"OlderBackupDoesNot":  {status: &v1alpha1.BackupObservation{ChangeWaitingSince: mt(t0), LastSuccessTime: mt(t0.Add(-time.Second))}, running: true, wait: true, waitingSince: mt(t0)},
		"TheWaitBeginsNow":    {status: &v1alpha1.BackupObservation{}, running: true, wait: true, waitingSince: mt(t0.Add(time.Minute))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := cluster("a", v1alpha1.EtcdClusterParameters{Backup: &v1alpha1.Backup{Schedule: "@hourly", BeforeChanges: tc.beforeChanges}})
			cr.SetUID("uid")
			cr.Status.AtProvider.Backup = tc.status
			b := newBackups(1, nil, nil)
			if tc.running {
				b.running["uid"] = &runningJob{cancel: func() {}}
			}
			e := &external{backups: b, now: func() time.Time { return t0.Add(time.Minute) }}
			if got := e.backupFirst(context.Background(), cr, etcd.Desired{Members: 1}, nil, upgrade); got != tc.wait {
				t.Errorf("backupFirst() = %t, want %t", got, tc.wait)
			}
			if diff := cmp.Diff(tc.waitingSince, cr.Status.AtProvider.Backup.ChangeWaitingSince); diff != "" {
				t.Errorf("changeWaitingSince (-want +got):\n%s", diff)
			}
			if tc.wait && !strings.Contains(cr.Status.AtProvider.NextStep, "waiting for a backup") {
				t.Errorf("nextStep %q does not say the change waits for a backup", cr.Status.AtProvider.NextStep)
			}
		})
	}
}

// TestBackupsShareSlotsFairly: the backups of one namespace take one slot at a time, so that a
// namespace whose object store is slow (or stalls on purpose) never holds every slot; and a
// forgotten cluster's job reports nothing.
func TestBackupsShareSlotsFairly(t *testing.T) {
	entered := make(chan string, 10)
	release := make(chan struct{})
	// The job's endpoint says whose it is; the S3 client of a job blocks like a slow server,
	// then fails.
	b := newBackups(2, func(c s3.Config) (s3.Objects, error) {
		entered <- c.Endpoint
		<-release
		return nil, errors.New("slow server gave up")
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = b.Start(ctx) }()
	job := func(uid, ns string) backupJob {
		return backupJob{uid: types.UID(uid), namespace: ns, s3: s3.Config{Endpoint: uid}, request: backup.Request{Now: time.Now()}}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !b.start(job("a-1", "a")) {
		if time.Now().After(deadline) {
			t.Fatal("the runner never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, j := range []backupJob{job("a-2", "a"), job("b-1", "b")} {
		if !b.start(j) {
			t.Fatalf("start(%s) = false, want it queued or running", j.uid)
		}
	}
	got := map[string]bool{}
	for range 2 {
		select {
		case e := <-entered:
			got[e] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("only %v got a slot, want a job of each namespace", got)
		}
	}
	if !got["b-1"] || got["a-1"] == got["a-2"] {
		t.Errorf("with 2 slots, %v ran first; want one job of namespace a and the job of b", got)
	}
	b.forget("b-1")
	close(release)
	select {
	case e := <-entered:
		if got[e] || e == "b-1" {
			t.Errorf("%s ran after the first two, want the other job of namespace a", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a-2 never ran once a-1 was done")
	}
	for b.isRunning("a-1") || b.isRunning("a-2") {
		time.Sleep(10 * time.Millisecond)
	}
	for _, uid := range []types.UID{"a-1", "a-2"} {
		if _, ok := b.result(uid); !ok {
			t.Errorf("%s finished without a result", uid)
		}
	}
	if _, ok := b.result("b-1"); ok {
		t.Error("the forgotten cluster's job reported a result")
	}
}
