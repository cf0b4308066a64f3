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
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	c := vgwSecret(t, ns, "s3", os.Getenv("VGW_ACCESS_KEY"), os.Getenv("VGW_SECRET_KEY"))
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
	defer r.Close() //nolint:errcheck // Read-only.
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
	withBackup(cr, v1alpha1.BackupDestination{BucketName: &bucket, CredentialsSecretRef: &v1alpha1.LocalObjectReference{Name: "s3"}}, 3)
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
	bkt := newBucket(ns, "backups", objv1alpha1.BucketParameters{ContractName: ptr.To("backup")})
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
	// Backups outlive their cluster; the test empties the bucket so the Bucket can go.
	if err := direct.EmptyBucket(ctx, name); err != nil {
		t.Fatal(err)
	}
}

// TestEtcdBackupFailuresAreReportedNotUnready: a destination whose credentials are missing,
// or a schedule too frequent, is reported on the backup status and as an event; the cluster
// stays Ready, and backups start once the Secret exists.
func TestEtcdBackupFailuresAreReportedNotUnready(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-backup-fail")
	bucket := bucketName(ns, "backups")
	cr := newEtcdCluster(ns, "late", etcdNew, 1)
	withBackup(cr, v1alpha1.BackupDestination{BucketName: &bucket, CredentialsSecretRef: &v1alpha1.LocalObjectReference{Name: "s3"}}, 3)
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
	if n := countEvents(t, ns, "late", "BackupFailed"); n == 0 {
		t.Error("no BackupFailed event")
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
	src := withBackup(newEtcdCluster(ns, "source", etcdNew, 3), v1alpha1.BackupDestination{BucketName: &bucket, CredentialsSecretRef: &v1alpha1.LocalObjectReference{Name: "s3"}}, 3)
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
		Source: v1alpha1.BackupDestination{Prefix: ptr.To(ns + "/source/")}, LatestBefore: &metav1.Time{Time: time.Now()},
	})
	runningCluster(t, byTime, clusterIs(1, etcdNew))
	if got, _ := allKeys(t, etcdClient(t, ns, "by-time-etcd", false)); !cmp.Equal(want, got) {
		t.Errorf("the cluster restored by time holds %d keys, want the %d of the backups", len(got), len(want))
	}

	// A tampered backup: the snapshot changed after its metadata was written.
	mds, _ := storedBackups(t, direct, bucket, ns+"/source/")
	md := mds[newest.Key]
	r, _, err := direct.GetObject(ctx, bucket, md.Key)
	if err != nil {
		t.Fatalf("the backup %s is gone already: %v", md.Key, err)
	}
	data, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	md.Key = "tampered/" + md.Key[strings.LastIndex(md.Key, "/")+1:]
	b, _ := json.Marshal(md)
	if err := direct.PutObject(ctx, bucket, md.Key, data); err != nil {
		t.Fatal(err)
	}
	if err := direct.PutObject(ctx, bucket, md.Key+".json", b); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		cr   *v1alpha1.EtcdCluster
		want string
	}{
		"tampered": {cr: restoreFrom(ns, "tampered", etcdNew, 3, bucket, v1alpha1.Restore{Key: &md.Key}), want: "cannot be restored, and nothing was started"},
		"missing":  {cr: restoreFrom(ns, "missing", etcdNew, 3, bucket, v1alpha1.Restore{Key: ptr.To(ns + "/source/nothing.snapshot")}), want: "cannot find the backup"},
		"too-new":  {cr: restoreFrom(ns, "too-new", etcdOld, 1, bucket, v1alpha1.Restore{Key: &newest.Key}), want: "restore it into 3.6 or 3.7"},
		"too-early": {cr: restoreFrom(ns, "too-early", etcdNew, 1, bucket, v1alpha1.Restore{
			Source: v1alpha1.BackupDestination{Prefix: ptr.To(ns + "/source/")}, LatestBefore: &metav1.Time{Time: written.Add(-time.Hour)},
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
