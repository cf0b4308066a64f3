//go:build integration

package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/common"
	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	objv1alpha1 "github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/internal/etcd/backup"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// backupEvery is the schedule of the backup tests: the shortest the provider accepts.
const backupEvery = "@every 5s"

// withBackup adds a backup schedule to cr.
func withBackup(cr *v1alpha1.EtcdCluster, d v1alpha1.BackupDestination, keepLast int32) *v1alpha1.EtcdCluster {
	cr.Spec.ForProvider.Backup = &v1alpha1.Backup{
		Schedule:    backupEvery,
		Destination: d,
		Retention:   &v1alpha1.Retention{KeepLast: ptr.To(keepLast)},
	}
	return cr
}

// vgwBackupBucket makes a versitygw bucket and a credentials Secret named s3 for it in ns,
// and returns the bucket's name and a direct client.
func vgwBackupBucket(t *testing.T, ns string) (string, *s3.Client) {
	t.Helper()
	return backupBucket(t, env.Kube, ns, vgwConfig(t))
}

// backupBucket makes a bucket with cfg's keys and a credentials Secret named s3 for it in ns
// (through kube), emptied and deleted when the test ends, and returns the bucket's name and
// a direct client.
func backupBucket(t *testing.T, kube client.Client, ns string, cfg s3.Config) (string, *s3.Client) {
	t.Helper()
	c := s3Secret(t, kube, ns, "s3", cfg)
	name := bucketName(ns, "backups")
	if err := c.CreateBucket(harness.Ctx(t), name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.EmptyBucket(context.Background(), name)
		_ = c.DeleteBucket(context.Background(), name)
	})
	return name, c
}

// inBucket is a backup destination in bucket with the namespace's credentials Secret s3.
func inBucket(bucket string) v1alpha1.BackupDestination {
	return v1alpha1.BackupDestination{BucketName: &bucket, CredentialsSecretRef: &v1alpha1.LocalObjectReference{Name: "s3"}}
}

// newEtcdBackup is an on-demand backup of the cluster into dest.
func newEtcdBackup(ns, name, cluster string, dest v1alpha1.BackupDestination) *v1alpha1.EtcdBackup {
	return &v1alpha1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.EtcdBackupSpec{ForProvider: v1alpha1.EtcdBackupParameters{
			ClusterRef: v1alpha1.LocalObjectReference{Name: cluster}, Destination: dest,
		}},
	}
}

// backupsSince waits until the cluster reports n successful backups that began after since,
// and returns the cluster as it was then.
func backupsSince(t *testing.T, cr *v1alpha1.EtcdCluster, since time.Time, n int) *v1alpha1.EtcdCluster {
	t.Helper()
	key := client.ObjectKeyFromObject(cr)
	seen := map[time.Time]bool{}
	harness.Eventually(t, 2*time.Minute, fmt.Sprintf("%d backups of %s after %s", n, key, since.Format(time.TimeOnly)), func() error {
		if err := env.Kube.Get(harness.Ctx(t), key, cr); err != nil {
			return err
		}
		b := cr.Status.AtProvider.Backup
		if b == nil || b.LastSuccessTime == nil {
			return fmt.Errorf("no backup yet: %+v", b)
		}
		if b.LastSuccessTime.After(since) {
			seen[b.LastSuccessTime.Time] = true
		}
		if len(seen) < n {
			return fmt.Errorf("%d of %d backups (state %s, reason %q)", len(seen), n, b.State, b.Reason)
		}
		return nil
	})
	return cr
}

// storedBackups reads what is under prefix directly: the metadata of each backup, and the
// snapshot keys.
func storedBackups(t *testing.T, c *s3.Client, bucket, prefix string) (map[string]backup.Metadata, []string) {
	t.Helper()
	ctx := harness.Ctx(t)
	objs, err := c.ListObjects(ctx, bucket, prefix)
	if err != nil {
		t.Fatal(err)
	}
	mds := map[string]backup.Metadata{}
	var snaps []string
	for _, o := range objs {
		switch {
		case strings.HasSuffix(o.Key, ".snapshot.json"):
			r, _, err := c.GetObject(ctx, bucket, o.Key)
			if err != nil {
				t.Fatal(err)
			}
			var md backup.Metadata
			err = json.NewDecoder(r).Decode(&md)
			_ = r.Close()
			if err != nil {
				t.Fatalf("metadata %s: %v", o.Key, err)
			}
			mds[md.Key] = md
		case strings.HasSuffix(o.Key, ".snapshot"):
			snaps = append(snaps, o.Key)
		default:
			t.Errorf("unexpected object %s under the backup prefix", o.Key)
		}
	}
	return mds, snaps
}

// sha256Of reads an object and returns its checksum and length.
func sha256Of(t *testing.T, c *s3.Client, bucket, key string) (string, int64) {
	t.Helper()
	r, _, err := c.GetObject(harness.Ctx(t), bucket, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

// TestEtcdBackupsOnSchedule: backups every 5s with keepLast 3 leave exactly three backups, each
// a snapshot whose checksum its metadata and the status record, taken from a follower; the
// cluster stays Ready throughout, and a member that dies does not stop backups.
func TestEtcdBackupsOnSchedule(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-backup")
	bucket, direct := vgwBackupBucket(t, ns)
	cr := newEtcdCluster(ns, "orders", etcdNew, 3)
	// Long enough that the member killed below stays dead while backups go on.
	cr.Spec.ForProvider.ReplaceUnhealthyAfter = ptr.To(common.Duration("1h"))
	withBackup(cr, inBucket(bucket), 3)
	cr.Spec.ForProvider.Backup.Verify = true
	start := time.Now()
	runningCluster(t, cr, clusterIs(3, etcdNew))
	c := etcdClient(t, ns, "orders-etcd", false)
	for i := range 20 {
		etcdPut(t, c, fmt.Sprintf("/orders/%03d", i), strings.Repeat("x", 1000))
	}

	cr = backupsSince(t, cr, start, 5)
	at := cr.Status.AtProvider
	b := at.Backup
	if b.State != v1alpha1.BackupHealthy || b.Reason != "" || b.ConsecutiveFailures != 0 {
		t.Errorf("backup state %s (%q, %d failures), want Healthy", b.State, b.Reason, b.ConsecutiveFailures)
	}
	if b.Bucket != bucket || b.Prefix != ns+"/orders/" {
		t.Errorf("backups in %s/%s, want %s/%s", b.Bucket, b.Prefix, bucket, ns+"/orders/")
	}
	if b.NextScheduledTime == nil || !b.NextScheduledTime.After(b.LastAttemptTime.Time) {
		t.Errorf("next backup %v, want after the last attempt %v", b.NextScheduledTime, b.LastAttemptTime)
	}
	if err := harness.ConditionIs(cr, "Ready", "True"); err != nil {
		t.Errorf("the cluster with backups: %v", err)
	}

	// Retention settles after each backup: look until the bucket and status agree.
	harness.Eventually(t, 30*time.Second, "exactly three backups stored", func() error {
		if err := env.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		b = cr.Status.AtProvider.Backup
		mds, snaps := storedBackups(t, direct, bucket, b.Prefix)
		if len(mds) != 3 || len(snaps) != 3 || len(b.Stored) != 3 {
			return fmt.Errorf("%d metadata, %d snapshots, %d in status; want 3 of each", len(mds), len(snaps), len(b.Stored))
		}
		for _, s := range b.Stored {
			if _, ok := mds[s.Key]; !ok || !slices.Contains(snaps, s.Key) {
				return fmt.Errorf("status lists %s, which the bucket does not hold whole", s.Key)
			}
		}
		return nil
	})
	mds, _ := storedBackups(t, direct, bucket, b.Prefix)
	for i, s := range b.Stored {
		md := mds[s.Key]
		sum, n := sha256Of(t, direct, bucket, s.Key)
		if sum != md.SHA256 || sum != s.SHA256 || n != md.Size || n != s.Size {
			t.Errorf("backup %s: object sha256 %s (%d bytes), metadata %s (%d), status %s (%d)", s.Key, sum, n, md.SHA256, md.Size, s.SHA256, s.Size)
		}
		if md.ClusterID != at.ClusterID || md.Cluster != ns+"/orders" || md.Owner != string(cr.GetUID()) || md.EtcdVersion != etcdNew || md.Encrypted {
			t.Errorf("backup %s: metadata %+v does not describe this cluster", s.Key, md)
		}
		if md.Member == at.Leader {
			t.Errorf("backup %s was taken from the leader %s; a follower was healthy", s.Key, md.Member)
		}
		if i > 0 && !b.Stored[i-1].Time.After(s.Time.Time) {
			t.Errorf("status lists %s before %s: want newest first", b.Stored[i-1].Key, s.Key)
		}
		if md.Revision < 21 {
			t.Errorf("backup %s: revision %d, want at least the 21 the writes made", s.Key, md.Revision)
		}
		if v := md.Verified; !s.Verified || v == nil || !v.Opened || v.Revision < md.Revision || v.TotalKeys < 20 {
			t.Errorf("backup %s: verified %t in status, %+v in its metadata; want it opened, at revision %d or later with the 20 keys", s.Key, s.Verified, v, md.Revision)
		}
	}

	// One member dies: backups go on, from the members left.
	var victim v1alpha1.MemberObservation
	for _, m := range at.Members {
		if !m.Leader {
			victim = m
			break
		}
	}
	if err := syscall.Kill(memberPIDs(t, cr)[victim.Name], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	cr = backupsSince(t, cr, killed.Add(time.Second), 2)
	mds, _ = storedBackups(t, direct, bucket, cr.Status.AtProvider.Backup.Prefix)
	newest := mds[cr.Status.AtProvider.Backup.Stored[0].Key]
	if newest.Member == victim.Name {
		t.Errorf("the backup after %s died was taken from it", victim.Name)
	}
	if n := countEvents(t, ns, "orders", "BackupFailed"); n != 0 {
		t.Errorf("%d BackupFailed events, want none", n)
	}
	// One BackedUp event per backup, not one per reconcile: the backups so far began every
	// 5s or so since the cluster started.
	if n, most := countEvents(t, ns, "orders", "BackedUp"), int(time.Since(start)/(4*time.Second))+1; n > most {
		t.Errorf("%d BackedUp events in %s, want one per backup (at most %d)", n, time.Since(start).Round(time.Second), most)
	}
}

// TestEtcdBackupsToSwiftThroughABucket: backups to a Bucket (bucketRef) on Swift, with the
// keys of a Contract that rotates them between two backups.
func TestEtcdBackupsToSwiftThroughABucket(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	contract, _ := readyContract(t, ns, "backup", objv1alpha1.ContractParameters{
		// Long enough that a backup that read the old keys finishes with them.
		Rotation: &objv1alpha1.KeyRotation{GracePeriod: ptr.To(common.Duration("20s"))},
	})
	bkt := newBucket(ns, "backups", objv1alpha1.BucketParameters{BucketName: ptr.To(bucketName(ns, "backups")), ContractName: ptr.To("backup")})
	if err := env.Kube.Create(ctx, bkt); err != nil {
		t.Fatal(err)
	}
	bkt = waitFor(t, bkt, "True", nil)

	cr := newEtcdCluster(ns, "carts", etcdNew, 3)
	withBackup(cr, v1alpha1.BackupDestination{BucketRef: &v1alpha1.LocalObjectReference{Name: "backups"}, Prefix: ptr.To("etcd/carts/")}, 2)
	start := time.Now()
	runningCluster(t, cr, clusterIs(3, etcdNew))
	cr = backupsSince(t, cr, start, 1)

	old := cr.Status.AtProvider.Backup.LastSuccessTime.Time
	env.Mutate(t, client.ObjectKeyFromObject(contract), contract, func() { contract.Spec.ForProvider.Rotation.Request = ptr.To("between-backups") })
	waitFor(t, contract, "True", func(c *objv1alpha1.Contract) error {
		if c.Status.AtProvider.LastRotationRequest != "between-backups" || c.Status.AtProvider.PreviousAccessKeyID != "" {
			return fmt.Errorf("rotation not finished (previous key %q)", c.Status.AtProvider.PreviousAccessKeyID)
		}
		return nil
	})
	rotated := time.Now()
	cr = backupsSince(t, cr, rotated, 2)
	if !cr.Status.AtProvider.Backup.LastSuccessTime.After(old) {
		t.Fatalf("no backup after the rotation")
	}

	cfg, err := keysOf(t, ns, "backup-s3")
	if err != nil {
		t.Fatal(err)
	}
	direct := s3Client(t, cfg)
	name := s3.BucketName(bkt)
	harness.Eventually(t, 30*time.Second, "two backups on Swift", func() error {
		mds, snaps := storedBackups(t, direct, name, "etcd/carts/")
		if len(mds) != 2 || len(snaps) != 2 {
			return fmt.Errorf("%d metadata and %d snapshots, want 2 of each", len(mds), len(snaps))
		}
		for k, md := range mds {
			if sum, n := sha256Of(t, direct, name, k); sum != md.SHA256 || n != md.Size {
				return fmt.Errorf("%s on Swift: sha256 %s (%d bytes), metadata %s (%d)", k, sum, n, md.SHA256, md.Size)
			}
		}
		return nil
	})
	if n := countEvents(t, ns, "carts", "BackupFailed"); n != 0 {
		t.Errorf("%d BackupFailed events, want none across the rotation", n)
	}
	// Backups outlive their cluster; the test empties the bucket so that the Bucket (which
	// deletes only empty buckets) takes it along.
	if err := env.Kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
	if err := direct.EmptyBucket(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Delete(ctx, bkt); err != nil {
		t.Fatal(err)
	}
	gone(t, bkt)
}

// TestEtcdBackupFailuresAreReportedNotUnready: a destination whose credentials are missing,
// or a schedule too frequent, is reported on the backup status and as an event; the cluster
// stays Ready, and backups start once the Secret exists.
func TestEtcdBackupFailuresAreReportedNotUnready(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-backup-fail")
	bucket := bucketName(ns, "backups")
	cr := newEtcdCluster(ns, "late", etcdNew, 1)
	withBackup(cr, inBucket(bucket), 3)
	runningCluster(t, cr, clusterIs(1, etcdNew))
	key := client.ObjectKeyFromObject(cr)
	harness.Eventually(t, time.Minute, "the missing Secret reported", func() error {
		if err := env.Kube.Get(harness.Ctx(t), key, cr); err != nil {
			return err
		}
		b := cr.Status.AtProvider.Backup
		if b == nil || b.State != v1alpha1.BackupFailing || !strings.Contains(b.Reason, "Secret") || b.ConsecutiveFailures < 2 {
			return fmt.Errorf("backup status %+v, want Failing twice over the missing Secret", b)
		}
		return harness.ConditionIs(cr, "Ready", "True")
	})
	// One event per failed attempt, not one per reconcile.
	if n, failures := countEvents(t, ns, "late", "BackupFailed"), int(cr.Status.AtProvider.Backup.ConsecutiveFailures); n == 0 || n > failures+1 {
		t.Errorf("%d BackupFailed events for %d failed attempts, want one each", n, failures)
	}

	vgwBackupBucket(t, ns)
	since := time.Now()
	cr = backupsSince(t, cr, since, 1)
	if b := cr.Status.AtProvider.Backup; b.State != v1alpha1.BackupHealthy || b.ConsecutiveFailures != 0 {
		t.Errorf("after the Secret appeared: state %s, %d failures; want Healthy, 0", b.State, b.ConsecutiveFailures)
	}

	// A schedule admission cannot judge is reported, with nothing attempted.
	env.Mutate(t, key, cr, func() { cr.Spec.ForProvider.Backup.Schedule = "@every 1s" })
	harness.Eventually(t, 30*time.Second, "the schedule refused", func() error {
		if err := env.Kube.Get(harness.Ctx(t), key, cr); err != nil {
			return err
		}
		if b := cr.Status.AtProvider.Backup; b.State != v1alpha1.BackupFailing || !strings.Contains(b.Reason, "more often than every 5s") {
			return fmt.Errorf("backup status %s %q", b.State, b.Reason)
		}
		return harness.ConditionIs(cr, "Ready", "True")
	})
	env.Mutate(t, key, cr, func() { cr.Spec.ForProvider.Backup.Schedule = "every day at noon" })
	harness.Eventually(t, 30*time.Second, "the schedule refused", func() error {
		if err := env.Kube.Get(harness.Ctx(t), key, cr); err != nil {
			return err
		}
		if b := cr.Status.AtProvider.Backup; b.State != v1alpha1.BackupFailing || !strings.Contains(b.Reason, "is not a schedule") {
			return fmt.Errorf("backup status %s %q", b.State, b.Reason)
		}
		return nil
	})
}

// allKeys reads every key and value of the cluster, and the revision it is at.
func allKeys(t *testing.T, c *clientv3.Client) (map[string]string, int64) {
	t.Helper()
	rsp, err := c.Get(harness.Ctx(t), "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	kv := make(map[string]string, len(rsp.Kvs))
	for _, x := range rsp.Kvs {
		kv[string(x.Key)] = string(x.Value)
	}
	return kv, rsp.Header.Revision
}

// restoreFrom is a cluster made from a backup of the versitygw bucket of the namespace.
func restoreFrom(ns, name, version string, members int32, bucket string, r v1alpha1.Restore) *v1alpha1.EtcdCluster {
	cr := newEtcdCluster(ns, name, version, members)
	if r.Source == nil {
		r.Source = &v1alpha1.BackupDestination{}
	}
	r.Source.BucketName, r.Source.CredentialsSecretRef = &bucket, &v1alpha1.LocalObjectReference{Name: "s3"}
	cr.Spec.ForProvider.Restore = &r
	return cr
}

// TestEtcdRestoreIntoANewCluster: a new cluster made from a backup holds every key and value
// of the backup, has a cluster ID of its own, and starts at a revision moved on past the old
// cluster's and compacted there, so that a watch of the old revisions sees a compaction. A
// backup chosen by time restores too. A tampered, a missing and a too-new backup are refused
// with nothing started.
func TestEtcdRestoreIntoANewCluster(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := etcdNamespace(t, "etcd-restore")
	bucket, direct := vgwBackupBucket(t, ns)
	src := withBackup(newEtcdCluster(ns, "source", etcdNew, 3), inBucket(bucket), 3)
	runningCluster(t, src, clusterIs(3, etcdNew))
	c := etcdClient(t, ns, "source-etcd", false)
	for i := range 200 {
		etcdPut(t, c, fmt.Sprintf("/catalog/%03d", i), fmt.Sprintf("item-%d-%s", i, strings.Repeat("z", i)))
	}
	// Overwrites and deletes: the backup holds the latest state, not the history.
	for i := range 50 {
		etcdPut(t, c, fmt.Sprintf("/catalog/%03d", i), "updated")
	}
	if _, err := c.Delete(ctx, "/catalog/19", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	want, oldRev := allKeys(t, c)
	written := time.Now()
	src = backupsSince(t, src, written, 1)
	newest := src.Status.AtProvider.Backup.Stored[0]
	// No more backups: the ones there stay put for the rest of the test.
	env.Mutate(t, client.ObjectKeyFromObject(src), src, func() { src.Spec.ForProvider.Backup = nil })
	if newest.Revision < oldRev {
		t.Fatalf("newest backup %s at revision %d, want at least %d", newest.Key, newest.Revision, oldRev)
	}

	restored := restoreFrom(ns, "restored", etcdNew, 3, bucket, v1alpha1.Restore{Key: &newest.Key})
	start := time.Now()
	runningCluster(t, restored, clusterIs(3, etcdNew))
	t.Logf("restored 3 members from %s (%d bytes) in %s", newest.Key, newest.Size, time.Since(start).Round(time.Millisecond))
	rc := etcdClient(t, ns, "restored-etcd", false)
	got, newRev := allKeys(t, rc)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys and values of the restored cluster (-backup +restored):\n%s", diff)
	}
	if restored.Status.AtProvider.ClusterID == src.Status.AtProvider.ClusterID {
		t.Errorf("the restored cluster has the cluster ID of its source, %s", src.Status.AtProvider.ClusterID)
	}
	if newRev < newest.Revision+v1alpha1.DefaultBumpRevision {
		t.Errorf("restored revision %d, want at least %d + %d", newRev, newest.Revision, v1alpha1.DefaultBumpRevision)
	}
	rf := restored.Status.AtProvider.RestoredFrom
	if rf == nil || rf.Key != newest.Key || rf.SHA256 != newest.SHA256 || rf.ClusterID != src.Status.AtProvider.ClusterID || rf.BumpRevision != v1alpha1.DefaultBumpRevision {
		t.Errorf("status.atProvider.restoredFrom %+v, want the backup %s of cluster %s", rf, newest.Key, src.Status.AtProvider.ClusterID)
	}
	// A watcher that resumes from a revision of the old cluster sees a compaction.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	wr := <-rc.Watch(wctx, "/catalog/", clientv3.WithPrefix(), clientv3.WithRev(oldRev))
	if wr.CompactRevision == 0 && !errors.Is(wr.Err(), rpctypes.ErrCompacted) {
		t.Errorf("watch from the old revision %d: %v (compact revision %d), want a compaction", oldRev, wr.Err(), wr.CompactRevision)
	}
	// The restored cluster takes writes.
	etcdPut(t, rc, "/after-restore", "yes")

	// By time: the newest backup before now, into a single member.
	byTime := restoreFrom(ns, "by-time", etcdNew, 1, bucket, v1alpha1.Restore{
		Source: &v1alpha1.BackupDestination{Prefix: ptr.To(ns + "/source/")}, LatestBefore: &metav1.Time{Time: time.Now()},
	})
	runningCluster(t, byTime, clusterIs(1, etcdNew))
	if got, _ := allKeys(t, etcdClient(t, ns, "by-time-etcd", false)); !cmp.Equal(want, got) {
		t.Errorf("the cluster restored by time holds %d keys, want the %d of the backups", len(got), len(want))
	}

	tampered := tamperedCopy(t, direct, bucket, ns+"/source/", newest.Key)
	for name, tc := range map[string]struct {
		cr   *v1alpha1.EtcdCluster
		want string
	}{
		"tampered": {cr: restoreFrom(ns, "tampered", etcdNew, 3, bucket, v1alpha1.Restore{Key: &tampered}), want: "cannot be restored"},
		"missing":  {cr: restoreFrom(ns, "missing", etcdNew, 3, bucket, v1alpha1.Restore{Key: ptr.To(ns + "/source/nothing.snapshot")}), want: "cannot find the backup"},
		"too-new":  {cr: restoreFrom(ns, "too-new", etcdOld, 1, bucket, v1alpha1.Restore{Key: &newest.Key}), want: "restore it into 3.6 or 3.7"},
		"too-early": {cr: restoreFrom(ns, "too-early", etcdNew, 1, bucket, v1alpha1.Restore{
			Source: &v1alpha1.BackupDestination{Prefix: ptr.To(ns + "/source/")}, LatestBefore: &metav1.Time{Time: written.Add(-time.Hour)},
		}), want: "was taken before"},
	} {
		if err := env.Kube.Create(ctx, tc.cr); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		waitForConditionMessage(t, toUnstructured(t, tc.cr), tc.want)
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(tc.cr), tc.cr); err != nil {
			t.Fatal(err)
		}
		if ms, err := env.Machines.List(ctx, string(tc.cr.GetUID())); err != nil || len(ms) != 0 {
			t.Errorf("%s: %d machines (%v), want none: nothing may start from a backup that cannot be restored", name, len(ms), err)
		}
	}
}

// objectBytes reads an object whole.
func objectBytes(t *testing.T, direct *s3.Client, bucket, key string) []byte {
	t.Helper()
	r, _, err := direct.GetObject(harness.Ctx(t), bucket, key)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// tamperedCopy stores a copy of the backup at key (under prefix) whose snapshot changed after
// its metadata was written, and returns the copy's key.
func tamperedCopy(t *testing.T, direct *s3.Client, bucket, prefix, key string) string {
	t.Helper()
	ctx := harness.Ctx(t)
	mds, _ := storedBackups(t, direct, bucket, prefix)
	md := mds[key]
	data := objectBytes(t, direct, bucket, md.Key)
	data[len(data)/2] ^= 1
	md.Key = "tampered/" + md.Key[strings.LastIndex(md.Key, "/")+1:]
	b, _ := json.Marshal(md)
	if err := direct.PutObject(ctx, bucket, md.Key, data); err != nil {
		t.Fatal(err)
	}
	if err := direct.PutObject(ctx, bucket, md.Key+".json", b); err != nil {
		t.Fatal(err)
	}
	return md.Key
}

// TestEtcdBackupOnDemand: an EtcdBackup stores one snapshot under a key of its own, a new
// cluster restores from it (and holds what the cluster held then, not what came after), and
// deleting it deletes its objects unless its management policies leave out Delete.
func TestEtcdBackupOnDemand(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := etcdNamespace(t, "etcd-ondemand")
	bucket, direct := vgwBackupBucket(t, ns)
	ledger := runningCluster(t, newEtcdCluster(ns, "ledger", etcdNew, 3), clusterIs(3, etcdNew))
	// A running cluster is not restored over.
	ledger.Spec.ForProvider.Restore = &v1alpha1.Restore{BackupRef: &v1alpha1.LocalObjectReference{Name: "any"}}
	if err := env.Kube.Update(ctx, ledger); err == nil || !strings.Contains(err.Error(), "honoured only when the cluster is created") {
		t.Errorf("adding restore to a running cluster: %v, want a refusal", err)
	}
	c := etcdClient(t, ns, "ledger-etcd", false)
	for i := range 30 {
		etcdPut(t, c, fmt.Sprintf("/ledger/%02d", i), fmt.Sprintf("entry %d", i))
	}
	want, _ := allKeys(t, c)

	dest := inBucket(bucket)
	newBackup := func(name string, policies ...xpv2.ManagementAction) *v1alpha1.EtcdBackup {
		b := newEtcdBackup(ns, name, "ledger", dest)
		if len(policies) > 0 {
			b.Spec.ManagementPolicies = policies
		}
		if err := env.Kube.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		return waitFor(t, b, "True", nil)
	}
	before := newBackup("before-migration")
	at := before.Status.AtProvider
	if !strings.HasPrefix(at.Key, ns+"/ledger/before-migration.") || meta.GetExternalName(before) != at.Key || at.Bucket != bucket {
		t.Errorf("backup stored at %s/%s (external name %q), want %s/%s/ledger/before-migration.<tag>.snapshot", at.Bucket, at.Key, meta.GetExternalName(before), bucket, ns)
	}
	if sum, n := sha256Of(t, direct, bucket, at.Key); sum != at.SHA256 || n != at.Size {
		t.Errorf("the object has sha256 %s (%d bytes), status says %s (%d)", sum, n, at.SHA256, at.Size)
	}
	// Spec is immutable: one EtcdBackup is one snapshot.
	before.Spec.ForProvider.ClusterRef.Name = "another"
	if err := env.Kube.Update(ctx, before); err == nil || !strings.Contains(err.Error(), "cannot change") {
		t.Errorf("changing an EtcdBackup's spec: %v, want a refusal", err)
	}

	// Writes after the backup are not in it.
	etcdPut(t, c, "/ledger/after", "not in the backup")
	restored := newEtcdCluster(ns, "ledger-restored", etcdNew, 1)
	restored.Spec.ForProvider.Restore = &v1alpha1.Restore{BackupRef: &v1alpha1.LocalObjectReference{Name: "before-migration"}}
	runningCluster(t, restored, clusterIs(1, etcdNew))
	got, _ := allKeys(t, etcdClient(t, ns, "ledger-restored-etcd", false))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the cluster restored from the EtcdBackup (-at the backup +restored):\n%s", diff)
	}

	// Deleting an EtcdBackup deletes its objects...
	if err := env.Kube.Delete(ctx, before); err != nil {
		t.Fatal(err)
	}
	gone(t, before)
	if mds, snaps := storedBackups(t, direct, bucket, at.Key); len(mds)+len(snaps) != 0 {
		t.Errorf("after deleting the EtcdBackup: %d metadata and %d snapshots left, want none", len(mds), len(snaps))
	}
	// ...unless its management policies keep them.
	kept := newBackup("kept", xpv2.ManagementActionObserve, xpv2.ManagementActionCreate, xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize)
	key := kept.Status.AtProvider.Key
	if err := env.Kube.Delete(ctx, kept); err != nil {
		t.Fatal(err)
	}
	gone(t, kept)
	if mds, snaps := storedBackups(t, direct, bucket, key); len(mds) != 1 || len(snaps) != 1 {
		t.Errorf("after deleting an EtcdBackup without the Delete policy: %d metadata and %d snapshots, want it kept", len(mds), len(snaps))
	}
}

// TestEtcdBackupBeforeAnUpgrade: with beforeChanges (the default), an upgrade waits for a
// backup taken after it was asked for; no member of the new version joins before.
func TestEtcdBackupBeforeAnUpgrade(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-before-upgrade")
	bucket, _ := vgwBackupBucket(t, ns)
	cr := newEtcdCluster(ns, "payments", etcdOld, 3)
	withBackup(cr, inBucket(bucket), 3)
	cr.Spec.ForProvider.Backup.Schedule = "0 0 1 1 *" // Once a year: only the upgrade's backup runs here.
	runningCluster(t, cr, clusterIs(3, etcdOld))
	key := client.ObjectKeyFromObject(cr)

	asked := time.Now().Add(-time.Second)
	env.Mutate(t, key, cr, func() { cr.Spec.ForProvider.Version = etcdNew })
	var backupAtFirstJoin *metav1.Time
	harness.Eventually(t, etcdWait, "the upgrade done", func() error {
		if err := env.Kube.Get(harness.Ctx(t), key, cr); err != nil {
			return err
		}
		for _, m := range cr.Status.AtProvider.Members {
			if m.Version == etcdNew && backupAtFirstJoin == nil {
				backupAtFirstJoin = &metav1.Time{}
				if b := cr.Status.AtProvider.Backup; b != nil && b.LastSuccessTime != nil {
					backupAtFirstJoin = b.LastSuccessTime.DeepCopy()
				}
			}
		}
		if err := harness.ConditionIs(cr, "Ready", "True"); err != nil {
			return err
		}
		return clusterIs(3, etcdNew)(cr)
	})
	if backupAtFirstJoin == nil || backupAtFirstJoin.Before(&metav1.Time{Time: asked}) {
		t.Errorf("when the first %s member joined, the last backup was %v; want one taken after the upgrade was asked for (%s)", etcdNew, backupAtFirstJoin, asked.Format(time.RFC3339))
	}
	if b := cr.Status.AtProvider.Backup; b.ChangeWaitingSince != nil || b.State != v1alpha1.BackupHealthy {
		t.Errorf("after the upgrade: backup state %s, change waiting since %v; want Healthy and no change waiting", b.State, b.ChangeWaitingSince)
	}
}

// TestEtcdEncryptedBackups: backups encrypted to an age recipient hold no plaintext; a
// restore with its identity holds every key; a restore with another identity, or none, is
// refused before anything starts.
func TestEtcdEncryptedBackups(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := etcdNamespace(t, "etcd-encrypted")
	bucket, direct := vgwBackupBucket(t, ns)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	other, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	for name, identity := range map[string]string{"right": id.String(), "wrong": other.String()} {
		if err := env.Kube.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: map[string]string{"age.key": identity},
		}); err != nil {
			t.Fatal(err)
		}
	}
	cr := withBackup(newEtcdCluster(ns, "secrets", etcdNew, 1), inBucket(bucket), 3)
	cr.Spec.ForProvider.Backup.Encryption = &v1alpha1.Encryption{Recipients: []string{id.Recipient().String()}}
	start := time.Now()
	runningCluster(t, cr, clusterIs(1, etcdNew))
	c := etcdClient(t, ns, "secrets-etcd", false)
	etcdPut(t, c, "/plain/marker", "find-me-in-the-clear-if-you-can")
	want, _ := allKeys(t, c)
	cr = backupsSince(t, cr, start.Add(time.Second), 2)
	newest := cr.Status.AtProvider.Backup.Stored[0]
	// An on-demand backup that names no recipients is encrypted as the cluster's backups are.
	onDemand := newEtcdBackup(ns, "on-demand", "secrets", inBucket(bucket))
	if err := env.Kube.Create(ctx, onDemand); err != nil {
		t.Fatal(err)
	}
	onDemand = waitFor(t, onDemand, "True", nil)
	env.Mutate(t, client.ObjectKeyFromObject(cr), cr, func() { cr.Spec.ForProvider.Backup = nil })
	if !onDemand.Status.AtProvider.Encrypted || !strings.HasPrefix(string(objectBytes(t, direct, bucket, onDemand.Status.AtProvider.Key)), "age-encryption.org/v1") {
		t.Errorf("the on-demand backup of a cluster whose backups are encrypted is stored in the clear (status %+v)", onDemand.Status.AtProvider)
	}

	mds, _ := storedBackups(t, direct, bucket, ns+"/secrets/")
	if md := mds[newest.Key]; !md.Encrypted {
		t.Errorf("metadata of %s: not encrypted", newest.Key)
	}
	data := objectBytes(t, direct, bucket, newest.Key)
	if strings.Contains(string(data), "find-me-in-the-clear") || !strings.HasPrefix(string(data), "age-encryption.org/v1") {
		t.Error("the stored backup is not an age file, or holds a value in the clear")
	}

	restore := func(name, secret string) *v1alpha1.EtcdCluster {
		r := v1alpha1.Restore{Key: &newest.Key}
		if secret != "" {
			r.Decryption = &v1alpha1.Decryption{IdentitySecretRef: v1alpha1.SecretKeyReference{Name: secret, Key: "age.key"}}
		}
		return restoreFrom(ns, name, etcdNew, 1, bucket, r)
	}
	runningCluster(t, restore("decrypted", "right"), clusterIs(1, etcdNew))
	if got, _ := allKeys(t, etcdClient(t, ns, "decrypted-etcd", false)); !cmp.Equal(want, got) {
		t.Errorf("the cluster restored from the encrypted backup holds %v, want %v", got, want)
	}
	for name, tc := range map[string]struct{ secret, want string }{
		"wrong-identity": {secret: "wrong", want: "cannot decrypt the backup"},
		"no-identity":    {want: "is encrypted"},
	} {
		bad := restore(name, tc.secret)
		if err := env.Kube.Create(ctx, bad); err != nil {
			t.Fatal(err)
		}
		waitForConditionMessage(t, toUnstructured(t, bad), tc.want)
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(bad), bad); err != nil {
			t.Fatal(err)
		}
		if ms, err := env.Machines.List(ctx, string(bad.GetUID())); err != nil || len(ms) != 0 {
			t.Errorf("%s: %d machines (%v), want none", name, len(ms), err)
		}
	}
	// The identity never shows up in logs or events.
	if env.Logs.Contains(strings.TrimPrefix(other.String(), "AGE-SECRET-KEY-1")[:20]) || env.Logs.Contains(strings.TrimPrefix(id.String(), "AGE-SECRET-KEY-1")[:20]) {
		t.Error("an age identity appears in the provider's log")
	}
}

// TestEtcdTransfersOfAStallingTenant: a tenant whose object store accepts requests and never
// answers holds one turn of the snapshots reconciles stream, whatever it asks for; its other
// restores wait their turn with a condition that says so, and another namespace's backup and
// restore go through meanwhile.
func TestEtcdTransfersOfAStallingTenant(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	hostile := etcdNamespace(t, "etcd-stalling")
	var hits atomic.Int64
	release := make(chan struct{})
	stalling := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	// Before the namespace goes (cleanups run last first): the stalled requests fail at
	// once, and the clusters can be deleted.
	t.Cleanup(func() { close(release); stalling.CloseClientConnections(); stalling.Close() })
	if err := env.Kube.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostile, Name: "s3"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": "stall", "AWS_SECRET_ACCESS_KEY": "stall-stall-stall", "S3_ENDPOINT": stalling.URL},
	}); err != nil {
		t.Fatal(err)
	}
	// More than the controller's workers (5 in the tests): were each to hold one, nothing
	// else would reconcile.
	stalled := make([]*v1alpha1.EtcdCluster, 6)
	for i := range stalled {
		stalled[i] = restoreFrom(hostile, fmt.Sprintf("stalled-%d", i), etcdNew, 1, "backups", v1alpha1.Restore{Key: ptr.To("any.snapshot")})
		if err := env.Kube.Create(ctx, stalled[i]); err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, waitReady, "the stalling tenant's other restores wait their turn", func() error {
		waiting := 0
		for _, cr := range stalled {
			got := &v1alpha1.EtcdCluster{}
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(cr), got); err != nil {
				return err
			}
			if c := got.GetCondition(xpv2.TypeSynced); c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "waiting to restore: namespace "+hostile) {
				waiting++
			}
		}
		if waiting < len(stalled)-1 || hits.Load() == 0 {
			return fmt.Errorf("%d restores waiting, %d requests to the stalling store", waiting, hits.Load())
		}
		return nil
	})

	// Meanwhile, another namespace backs up and restores as usual.
	ns := etcdNamespace(t, "etcd-beside-stalling")
	bucket, _ := vgwBackupBucket(t, ns)
	runningCluster(t, newEtcdCluster(ns, "source", etcdNew, 1), clusterIs(1, etcdNew))
	b := newEtcdBackup(ns, "now", "source", inBucket(bucket))
	if err := env.Kube.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, "True", nil)
	restored := newEtcdCluster(ns, "restored", etcdNew, 1)
	restored.Spec.ForProvider.Restore = &v1alpha1.Restore{BackupRef: &v1alpha1.LocalObjectReference{Name: "now"}}
	runningCluster(t, restored, clusterIs(1, etcdNew))
	for _, cr := range stalled {
		if ms, err := env.Machines.List(ctx, string(cr.GetUID())); err != nil || len(ms) != 0 {
			t.Errorf("%s: %d machines (%v), want none: its backup was never read", cr.GetName(), len(ms), err)
		}
	}
}
