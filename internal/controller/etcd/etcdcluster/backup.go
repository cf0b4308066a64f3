package etcdcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"filippo.io/age"
	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/internal/controller/etcd/authority"
	"github.com/stackservices/provider-stackservices/internal/etcd"
	"github.com/stackservices/provider-stackservices/internal/etcd/backup"
	"github.com/stackservices/provider-stackservices/internal/transfers"
)

const (
	errFmtSchedule       = "spec.forProvider.backup.schedule %q is not a schedule: %v"
	errFmtEveryTooOft    = "spec.forProvider.backup.schedule %q runs more often than every %s"
	errNoLeader          = "the cluster has no leader: a snapshot now could miss writes, so none is taken"
	errNoBackupMember    = "no healthy voting member to take a snapshot from"
	errS3Client          = "cannot build the S3 client of the backup destination"
	errFmtDestination    = "cannot use spec.forProvider.backup.destination: %v"
	errBackupsStopped    = "the provider is stopping"
	errFmtUnverified     = "backup %s did not verify, and was deleted: %v"
	errFmtUnverifiedKept = "backup %s did not verify: %v; and it could not be deleted: %v"
	errFmtRetentionRan   = "the backup was stored, but retention failed: %v"

	reasonBackedUp     = event.Reason("BackedUp")
	reasonBackupFailed = event.Reason("BackupFailed")

	// minEvery is the shortest @every schedule: a tenant must not turn backups into a load
	// test of its cluster and of the object store.
	minEvery = 5 * time.Second
	// backupTimeout bounds one backup, however large the database.
	backupTimeout = 2 * time.Hour
	// DefaultBackupSlots is how many backups the provider runs at once, over every cluster.
	DefaultBackupSlots = 2
	// failureBackoff and maxFailureBackoff bound how soon a failed backup is tried again.
	failureBackoff    = 30 * time.Second
	maxFailureBackoff = 30 * time.Minute
	// preChangeRetry is how soon a backup a change waits for is tried again after it failed.
	preChangeRetry = time.Minute
)

// scheduleParser reads the five standard cron fields and the descriptors (@hourly, @every).
// Seconds are not a field: @every is the way to run more often than each minute.
var scheduleParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseSchedule parses a backup schedule, in UTC.
func parseSchedule(s string) (cron.Schedule, error) {
	sched, err := scheduleParser.Parse(s)
	if err != nil {
		return nil, errors.Errorf(errFmtSchedule, s, err)
	}
	if every, ok := sched.(cron.ConstantDelaySchedule); ok && every.Delay < minEvery {
		return nil, errors.Errorf(errFmtEveryTooOft, s, minEvery)
	}
	return sched, nil
}

// A backupJob is everything one backup needs, captured when it starts: the job runs after
// the reconcile that started it has returned.
type backupJob struct {
	uid types.UID
	// namespace of the cluster: a namespace runs one backup at a time.
	namespace string
	s3        s3.Config
	store     backup.Store
	policy    backup.Policy
	verify    bool
	endpoint  string
	tls       *tls.Config
	request   backup.Request
}

// A backupResult is what a job did.
type backupResult struct {
	started time.Time
	taken   backup.Metadata
	stored  []backup.Metadata
	err     error
}

// backups runs the scheduled backups of every cluster in the background: a backup lasts as
// long as its database takes to stream, which can be far longer than a reconcile may take.
// At most one runs per cluster, and at most len(slots) in all, so that clusters with large
// databases delay each other's backups but never the reconciliation of anything.
type backups struct {
	newObjects func(s3.Config) (s3.Objects, error)
	newCluster clusterFactory
	turns      *transfers.Limiter

	mu      sync.Mutex
	base    context.Context // The manager's: jobs stop when the provider does.
	running map[types.UID]*runningJob
	results map[types.UID]backupResult
	wg      sync.WaitGroup
}

// A runningJob is a job in progress, and how to stop it.
type runningJob struct{ cancel context.CancelFunc }

func newBackups(slots int, newObjects func(s3.Config) (s3.Objects, error), newCluster clusterFactory) *backups {
	return &backups{
		newObjects: newObjects,
		newCluster: newCluster,
		turns:      transfers.New(slots),
		running:    map[types.UID]*runningJob{},
		results:    map[types.UID]backupResult{},
	}
}

// Start makes backups a manager runnable: jobs run under the manager's context, and the
// manager waits for them (they abort their uploads) when it stops.
func (b *backups) Start(ctx context.Context) error {
	b.mu.Lock()
	b.base = ctx
	b.mu.Unlock()
	<-ctx.Done()
	b.wg.Wait()
	return nil
}

// isRunning tells whether a backup of the cluster is in progress.
func (b *backups) isRunning(uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.running[uid]
	return ok
}

// result is the outcome of the cluster's last finished job, if the provider saw one.
func (b *backups) result(uid types.UID) (backupResult, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.results[uid]
	return r, ok
}

// forget cancels the cluster's job, if any, and drops what is known of it: the cancelled
// job reports nothing when it ends.
func (b *backups) forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if j, ok := b.running[uid]; ok {
		j.cancel()
		delete(b.running, uid)
	}
	delete(b.results, uid)
}

// start runs the job in the background; false when one runs already for the cluster or the
// provider is not running (yet, or any more).
func (b *backups) start(j backupJob) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.running[j.uid]; ok || b.base == nil || b.base.Err() != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(b.base, backupTimeout)
	this := &runningJob{cancel: cancel}
	b.running[j.uid] = this
	b.wg.Go(func() {
		defer cancel()
		r := b.run(ctx, j)
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.running[j.uid] != this {
			return // Forgotten: the cluster is gone.
		}
		delete(b.running, j.uid)
		b.results[j.uid] = r
	})
	return true
}

func (b *backups) run(ctx context.Context, j backupJob) backupResult {
	r := backupResult{started: j.request.Now}
	// The clusters of one namespace (one tenant, whose object store may be slow or hostile)
	// never hold more than one slot, so that other namespaces' backups always get through.
	release, err := b.turns.Acquire(ctx, j.namespace)
	if err != nil {
		r.err = errors.New(errBackupsStopped)
		return r
	}
	defer release()
	objs, err := b.newObjects(j.s3)
	if err != nil {
		r.err = errors.Wrap(err, errS3Client)
		return r
	}
	j.store.Objects = objs
	cl, err := b.newCluster(ctx, []string{j.endpoint}, j.tls)
	if err != nil {
		r.err = errors.Wrap(err, errConnectCluster)
		return r
	}
	defer cl.Close() //nolint:errcheck // Nothing to do about a connection that fails to close.
	j.request.Open = func(ctx context.Context) (*etcdclient.Snapshot, error) { return cl.Snapshot(ctx, j.endpoint) }
	if r.taken, r.err = backup.Take(ctx, j.store, j.request); r.err != nil {
		return r
	}
	if j.verify {
		verified, err := backup.Verify(ctx, j.store, r.taken, os.TempDir())
		if err != nil {
			// Not a backup to restore from: it goes, and the attempt failed.
			r.err = errors.Errorf(errFmtUnverified, r.taken.Key, err)
			if derr := backup.Remove(ctx, j.store, r.taken.Key); derr != nil {
				r.err = errors.Errorf(errFmtUnverifiedKept, r.taken.Key, err, derr)
			}
			r.taken = backup.Metadata{}
			return r
		}
		r.taken = verified
	}
	if r.stored, err = backup.Prune(ctx, j.store, j.policy, time.Now()); err != nil {
		r.err = errors.Errorf(errFmtRetentionRan, err)
	}
	return r
}

// destination resolves where the cluster's backups go.
func destination(ctx context.Context, kube client.Reader, cr *v1alpha1.EtcdCluster) (backup.Location, error) {
	return backup.Locate(ctx, kube, cr.GetNamespace(), cr.Spec.ForProvider.Backup.Destination, "spec.forProvider.backup.destination", cr.GetNamespace()+"/"+cr.GetName()+"/")
}

func retentionOf(cr *v1alpha1.EtcdCluster) backup.Policy {
	p := backup.Policy{KeepLast: 7}
	if r := cr.Spec.ForProvider.Backup.Retention; r != nil {
		p.KeepLast = int(ptr.Deref(r.KeepLast, 7))
		p.KeepHourly = int(ptr.Deref(r.KeepHourly, 0))
		p.KeepDaily = int(ptr.Deref(r.KeepDaily, 0))
		p.KeepWeekly = int(ptr.Deref(r.KeepWeekly, 0))
	}
	return p
}

// observeBackups folds what the cluster's backup jobs did into status, and says whether a
// backup is due. It reads nothing outside the provider: jobs report through b. atRest says
// the cluster needs no change: a change that waited for a backup is over.
func (e *external) observeBackups(cr *v1alpha1.EtcdCluster, atRest bool) (due bool) {
	spec := cr.Spec.ForProvider.Backup
	if spec == nil || e.backups == nil {
		cr.Status.AtProvider.Backup = nil
		return false
	}
	st := cr.Status.AtProvider.Backup
	if st == nil {
		st = &v1alpha1.BackupObservation{}
		cr.Status.AtProvider.Backup = st
	}
	if r, ok := e.backups.result(cr.GetUID()); ok {
		e.report(cr, st, r)
	}
	if atRest {
		st.ChangeWaitingSince = nil
	}
	sched, err := parseSchedule(spec.Schedule)
	if err != nil {
		e.fail(cr, st, err)
		st.NextScheduledTime = nil
		return false
	}
	if e.backups.isRunning(cr.GetUID()) {
		if st.State == "" {
			st.State = v1alpha1.BackupRunning
		}
		return false
	}
	from := cr.GetCreationTimestamp().Time
	if st.LastAttemptTime != nil {
		from = st.LastAttemptTime.Time
	}
	next := sched.Next(from.UTC())
	if retry, ok := retryAfterFailure(st); ok && retry.Before(next) {
		next = retry
	}
	st.NextScheduledTime = &metav1.Time{Time: next}
	return !e.now().Before(next)
}

// retryAfterFailure is when a backup whose last attempt failed is tried again before its next
// scheduled time: 30s after the first failure, doubling with each failure up to 30m. A daily
// backup that failed because its bucket was not there yet does not wait a day.
func retryAfterFailure(st *v1alpha1.BackupObservation) (time.Time, bool) {
	if st.State != v1alpha1.BackupFailing || st.LastFailureTime == nil || !sameTime(st.LastAttemptTime, st.LastFailureTime.Time) {
		return time.Time{}, false
	}
	backoff := failureBackoff
	for i := int32(1); i < st.ConsecutiveFailures && backoff < maxFailureBackoff; i++ {
		backoff *= 2
	}
	return st.LastFailureTime.Add(min(backoff, maxFailureBackoff)), true
}

// report writes a finished job's outcome into status, once: the result stays known until
// the next job replaces it, and status says whether it was reported (a status write that
// lost a conflict did not, and the next observation reports it again).
func (e *external) report(cr *v1alpha1.EtcdCluster, st *v1alpha1.BackupObservation, r backupResult) {
	started := r.started.Truncate(time.Second)
	if st.LastAttemptTime == nil || st.LastAttemptTime.Time.Before(started) {
		st.LastAttemptTime = &metav1.Time{Time: started}
	}
	if r.taken.Key != "" && !sameTime(st.LastSuccessTime, started) {
		st.LastSuccessTime = &metav1.Time{Time: started}
		st.ConsecutiveFailures = 0
		st.State, st.Reason = v1alpha1.BackupHealthy, ""
		if r.stored != nil {
			st.Stored = storedBackups(r.stored)
		}
		e.record.Event(cr, event.Normal(reasonBackedUp, fmt.Sprintf("Stored backup %s (%d bytes, revision %d) from member %s; keeping %d",
			r.taken.Key, r.taken.Size, r.taken.Revision, r.taken.Member, len(st.Stored))))
	}
	if r.err != nil {
		e.failAttempt(cr, st, started, r.err)
	}
}

// sameTime compares at the precision status keeps (seconds): a time read back from status
// never equals one in memory with its nanoseconds.
func sameTime(t *metav1.Time, u time.Time) bool {
	return t != nil && t.Time.Truncate(time.Second).Equal(u.Truncate(time.Second))
}

// failAttempt reports a backup attempt (begun at started) that failed, once. It does not
// touch the cluster's readiness: the cluster serves as well without a backup, and the next
// one is attempted all the same (see retryAfterFailure).
func (e *external) failAttempt(cr *v1alpha1.EtcdCluster, st *v1alpha1.BackupObservation, started time.Time, err error) {
	if sameTime(st.LastFailureTime, started) {
		return
	}
	st.LastFailureTime = &metav1.Time{Time: started}
	st.State, st.Reason = v1alpha1.BackupFailing, err.Error()
	st.ConsecutiveFailures++
	e.record.Event(cr, event.Warning(reasonBackupFailed, err))
}

// fail reports a spec that stops backups before any attempt (a schedule that does not
// parse), once per reason.
func (e *external) fail(cr *v1alpha1.EtcdCluster, st *v1alpha1.BackupObservation, err error) {
	if st.State == v1alpha1.BackupFailing && st.Reason == err.Error() {
		return
	}
	st.State, st.Reason = v1alpha1.BackupFailing, err.Error()
	e.record.Event(cr, event.Warning(reasonBackupFailed, err))
}

func storedBackups(ms []backup.Metadata) []v1alpha1.StoredBackup {
	out := make([]v1alpha1.StoredBackup, 0, len(ms))
	for _, m := range ms {
		out = append(out, v1alpha1.StoredBackup{Key: m.Key, Time: metav1.Time{Time: m.Time}, Revision: m.Revision, Size: m.Size, SHA256: m.SHA256, Verified: m.Verified != nil})
	}
	return out
}

// startBackup starts the backup that is due, from a healthy follower when there is one (the
// leader has the most to do). Whatever stops it from starting is reported like a failed
// backup, and the attempt counts: the next one is the next scheduled time, not at once.
func (e *external) startBackup(ctx context.Context, cr *v1alpha1.EtcdCluster, a *authority.Authority, o *observation) {
	st := cr.Status.AtProvider.Backup
	sched, err := parseSchedule(cr.Spec.ForProvider.Backup.Schedule)
	if err != nil {
		return
	}
	// Whole seconds, as status keeps them: the job reports this time back, and status must
	// recognise it as the attempt it recorded.
	now := e.now().UTC().Truncate(time.Second)
	st.LastAttemptTime = &metav1.Time{Time: now}
	st.NextScheduledTime = &metav1.Time{Time: sched.Next(now)}

	from, err := backupMember(o)
	if err != nil {
		e.failAttempt(cr, st, now, err)
		return
	}
	loc, err := destination(ctx, e.kube, cr)
	if err != nil {
		e.failAttempt(cr, st, now, errors.Errorf(errFmtDestination, err))
		return
	}
	tlsCfg, err := a.TLSConfig()
	if err != nil {
		e.failAttempt(cr, st, now, err)
		return
	}
	recipients, err := recipientsOf(cr.Spec.ForProvider.Backup.Encryption)
	if err != nil {
		e.failAttempt(cr, st, now, err)
		return
	}
	st.Bucket, st.Prefix = loc.Bucket, loc.Prefix
	j := backupJob{
		uid: cr.GetUID(), namespace: cr.GetNamespace(),
		s3:       loc.S3,
		store:    backup.Store{Bucket: loc.Bucket, Prefix: loc.Prefix, Owner: string(cr.GetUID())},
		policy:   retentionOf(cr),
		verify:   cr.Spec.ForProvider.Backup.Verify,
		endpoint: from.clientURL,
		tls:      tlsCfg,
		request: backup.Request{
			Cluster: cr.GetNamespace() + "/" + cr.GetName(), ClusterID: cr.Status.AtProvider.ClusterID,
			Member: from.plan.Name, EtcdVersion: cr.Status.AtProvider.Version, Now: now,
			Recipients: recipients,
		},
	}
	if !e.backups.start(j) {
		// One runs already (a reconcile raced this one), or the provider stops: nothing lost.
		return
	}
	if st.State == "" {
		st.State = v1alpha1.BackupRunning
	}
}

// backupMember picks the member to copy: a healthy voter that is not the leader, else the
// leader. Learners may lag; unhealthy members cannot answer.
func backupMember(o *observation) (member, error) {
	if o.leader == 0 {
		return member{}, errors.New(errNoLeader)
	}
	var leader *member
	for i := range o.members {
		m := &o.members[i]
		if m.plan.ID == 0 || m.plan.Learner || !m.plan.Healthy || m.clientURL == "" {
			continue
		}
		if m.plan.ID != o.leader {
			return *m, nil
		}
		leader = m
	}
	if leader == nil {
		return member{}, errors.New(errNoBackupMember)
	}
	return *leader, nil
}

// backupFirst holds a change that must not start without a fresh backup (an upgrade, a
// certificate roll, a scale-in) until a backup that began after the change first waited has
// succeeded, starting that backup when none runs. It reports what the change waits for in
// status.atProvider.nextStep. A backup that failed is tried again after preChangeRetry.
func (e *external) backupFirst(ctx context.Context, cr *v1alpha1.EtcdCluster, d etcd.Desired, a *authority.Authority, o *observation) (wait bool) {
	spec, st := cr.Spec.ForProvider.Backup, cr.Status.AtProvider.Backup
	if st != nil && o.next.Type == etcd.None {
		// At rest: whatever change waited is over.
		st.ChangeWaitingSince = nil
	}
	if spec == nil || st == nil || e.backups == nil || !ptr.Deref(spec.BeforeChanges, true) || !changeNeedsBackup(d, o) {
		return false
	}
	now := e.now()
	if st.ChangeWaitingSince == nil {
		st.ChangeWaitingSince = &metav1.Time{Time: now}
	}
	since := st.ChangeWaitingSince.Time
	if st.LastSuccessTime != nil && !st.LastSuccessTime.Time.Before(since) {
		return false
	}
	if !e.backups.isRunning(cr.GetUID()) && (st.LastAttemptTime == nil || st.LastAttemptTime.Time.Before(since) || now.Sub(st.LastAttemptTime.Time) >= preChangeRetry) {
		e.startBackup(ctx, cr, a, o)
	}
	cr.Status.AtProvider.NextStep = fmt.Sprintf("waiting for a backup before the change goes on (spec.forProvider.backup.beforeChanges); then: %s", o.next.Reason)
	if st.State == v1alpha1.BackupFailing {
		cr.Status.AtProvider.NextStep += "; the last backup failed: " + st.Reason
	}
	return true
}

// changeNeedsBackup tells whether the next step is part of a change a backup must come
// before: an upgrade, a certificate roll, or a scale-in. Waiting and blocked steps change
// nothing.
func changeNeedsBackup(d etcd.Desired, o *observation) bool {
	switch o.next.Type {
	case etcd.None, etcd.Wait, etcd.Blocked:
		return false
	}
	switch o.next.Phase {
	case etcd.PhaseUpgrading, etcd.PhaseRenewing:
		return true
	case etcd.PhaseScaling:
		voters := 0
		for _, m := range o.members {
			if m.plan.ID != 0 && !m.plan.Learner {
				voters++
			}
		}
		return d.Members < voters
	}
	return false
}

// recipientsOf parses the age recipients backups are encrypted to.
func recipientsOf(enc *v1alpha1.Encryption) ([]age.Recipient, error) {
	if enc == nil {
		return nil, nil
	}
	return backup.ParseRecipients("spec.forProvider.backup.encryption.recipients", enc.Recipients)
}
