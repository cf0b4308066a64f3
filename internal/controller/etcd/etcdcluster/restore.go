package etcdcluster

import (
	"bytes"
	"context"
	"sync"
	"time"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/etcd"
	"github.com/stackservices/provider-stackservices/internal/etcd/backup"
	"github.com/stackservices/provider-stackservices/internal/machines"
)

const (
	errFmtRestoreFind        = "cannot find the backup spec.forProvider.restore names: %v"
	errFmtRestoreCheck       = "backup %s cannot be restored, and nothing was started: %v"
	errFmtRestoreRefused     = "backup %s cannot be restored, and the machines of the attempt were deleted: %v"
	errFmtRestoreVersion     = "backup %s is of etcd %s: restore it into %d.%d or %d.%d (etcd moves one minor version at a time, never back), not %s"
	errRestorePresign        = "cannot make the URL the members read the backup from"
	errGetIdentity           = "cannot get the Secret spec.forProvider.restore.decryption.identitySecretRef names"
	errFmtNoIdentity         = "the key %s of the Secret %s holds no age identity (AGE-SECRET-KEY-1...)"
	errFmtBackupNotTaken     = "the EtcdBackup %s has not stored its snapshot yet"
	errFmtRestoreWaits       = "waiting to restore: namespace %s streams another backup already, or the provider streams %d at once; retrying"
	errFmtEncryptedOnServers = "backup %s is encrypted: restoring an encrypted backup onto OpenStack servers is not supported yet " +
		"(the age identity would stay in the servers' user-data, in Nova and in each server's metadata service, and decrypt every backup made to its recipient); " +
		"restore an unencrypted backup"

	// restoreURLTTL is how long the URL members fetch the backup from works: long enough for
	// every member to start its download (a server may take the provider's check of the
	// backup, its boot volume, a build of up to 10 minutes and its boot before it fetches),
	// short enough to be worthless soon after.
	restoreURLTTL = 30 * time.Minute
)

// restoreSource finds the backup the spec names, checks that the cluster's version can run
// it, and returns where the members fetch it from (a pre-signed URL, so that no member ever
// holds S3 credentials). The backup is checked whole (size and SHA-256 against its metadata,
// decryption, etcd's own checksum) before anything starts from it: by the machines
// themselves as they fetch it when the backend is a machines.SnapshotChecker, else by the
// provider, as the source's Checked (members may fetch the backup meanwhile, and nothing
// starts unless it passes).
func (e *external) restoreSource(ctx context.Context, cr *v1alpha1.EtcdCluster, s settings) (*machines.RestoreSource, error) {
	r := cr.Spec.ForProvider.Restore
	var loc backup.Location
	var err error
	var fromBackup *v1alpha1.EtcdBackup
	if r.BackupRef != nil {
		fromBackup = &v1alpha1.EtcdBackup{}
		if err = e.kube.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: r.BackupRef.Name}, fromBackup); err == nil {
			if fromBackup.Status.AtProvider.Key == "" {
				err = errors.Errorf(errFmtBackupNotTaken, r.BackupRef.Name)
			} else {
				loc, err = backup.LocateBackup(ctx, e.kube, fromBackup)
			}
		}
	} else {
		loc, err = backup.Locate(ctx, e.kube, cr.GetNamespace(), *r.Source, "spec.forProvider.restore.source", "")
	}
	if err != nil {
		return nil, errors.Errorf(errFmtRestoreFind, err)
	}
	objs, err := e.newObjects(loc.S3)
	if err != nil {
		return nil, errors.Errorf(errFmtRestoreFind, err)
	}
	st := backup.Store{Objects: objs, Bucket: loc.Bucket, Prefix: loc.Prefix}
	var md backup.Metadata
	switch {
	case fromBackup != nil:
		md, err = backup.Describe(ctx, st, fromBackup.Status.AtProvider.Key)
	case r.Key != nil:
		md, err = backup.Describe(ctx, st, *r.Key)
	default:
		md, err = backup.LatestBefore(ctx, st, r.LatestBefore.Time)
	}
	if err != nil {
		return nil, errors.Errorf(errFmtRestoreFind, err)
	}
	if err := restorableInto(md, s.desired.Version); err != nil {
		return nil, err
	}
	identity, ids, err := e.restoreIdentity(ctx, cr)
	if err != nil {
		return nil, err
	}
	// An identity goes only to machines that drop it after the restore.
	if md.Encrypted && !machines.DecryptsSnapshots(e.machines) {
		return nil, errors.Errorf(errFmtEncryptedOnServers, md.Key)
	}
	if err := backup.Decryptable(md, ids...); err != nil {
		return nil, errors.Errorf(errFmtRestoreCheck, md.Key, err)
	}
	url, err := objs.PresignGet(ctx, loc.Bucket, md.Key, restoreURLTTL)
	if err != nil {
		return nil, errors.Wrap(err, errRestorePresign)
	}
	bump := ptr.Deref(r.BumpRevision, v1alpha1.DefaultBumpRevision)
	cr.Status.AtProvider.RestoredFrom = &v1alpha1.RestoredBackup{
		Key: md.Key, SHA256: md.SHA256, ClusterID: md.ClusterID, Revision: md.Revision, BumpRevision: bump, Time: metav1.Time{Time: md.Time},
	}
	// Written now: crossplane-runtime re-reads the resource after Create (to record the
	// external name), which drops status set in memory.
	e.patchAtProvider(ctx, cr, map[string]any{"restoredFrom": cr.Status.AtProvider.RestoredFrom})
	src := &machines.RestoreSource{
		URL: url, Size: md.Size, SHA256: md.SHA256, BumpRevision: uint64(bump), AgeIdentity: identity, //nolint:gosec // At least 1 by admission.
	}
	if !machines.ChecksSnapshots(e.machines) {
		src.Checked = onceChecked(ctx, func(ctx context.Context) error {
			if err := backup.Check(ctx, st, md, ids...); err != nil {
				return errors.Errorf(errFmtRestoreCheck, md.Key, err)
			}
			return nil
		})
	}
	return src, nil
}

// restoreIdentity reads the age identity spec.forProvider.restore.decryption names, from a
// Secret in the cluster's namespace. Its content is never part of an error.
func (e *external) restoreIdentity(ctx context.Context, cr *v1alpha1.EtcdCluster) (string, []age.Identity, error) {
	d := cr.Spec.ForProvider.Restore.Decryption
	if d == nil {
		return "", nil, nil
	}
	ref := d.IdentitySecretRef
	s := &corev1.Secret{}
	if err := e.kube.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: ref.Name}, s); err != nil {
		return "", nil, errors.Wrap(err, errGetIdentity)
	}
	b := s.Data[ref.Key]
	ids, err := age.ParseIdentities(bytes.NewReader(b))
	if len(b) == 0 || err != nil {
		return "", nil, errors.Errorf(errFmtNoIdentity, ref.Key, ref.Name)
	}
	return string(b), ids, nil
}

// restorableInto says whether a cluster of version v can start from the backup: the version
// the backup's cluster ran, or the next minor one (an upgrade); never an older one.
func restorableInto(md backup.Metadata, v etcd.Version) error {
	from, err := etcd.ParseVersion(md.EtcdVersion)
	if err != nil {
		// Only the storage version is known (3.6.0): its minor is what counts.
		if from, err = etcd.ParseVersion(md.StorageVersion); err != nil {
			return nil
		}
	}
	if v.Major == from.Major && (v.Minor == from.Minor || v.Minor == from.Minor+1) {
		return nil
	}
	return errors.Errorf(errFmtRestoreVersion, md.Key, from, from.Major, from.Minor, from.Major, from.Minor+1, v)
}

// onceChecked returns a function that runs check once, from the first call on, and waits for
// its outcome: every member's Start waits for the same check, and an attempt that makes no
// machine from the backup (its servers exist already) does not read it again.
func onceChecked(ctx context.Context, check func(context.Context) error) func(context.Context) error {
	var once sync.Once
	done := make(chan struct{})
	var err error
	return func(wctx context.Context) error {
		once.Do(func() {
			go func() {
				defer close(done)
				err = check(ctx)
			}()
		})
		select {
		case <-done:
			return err
		case <-wctx.Done():
			return wctx.Err()
		}
	}
}

// refusedRestore is why the backup (key) a bootstrap restores from cannot be restored, if it cannot:
// the provider's check failed (no member started from it), or a machine refused its copy.
func refusedRestore(ctx context.Context, key string, src *machines.RestoreSource, startErrs []error) error {
	if src.Checked != nil {
		if err := src.Checked(ctx); err != nil {
			return err
		}
	}
	var refused *machines.RefusedSnapshotError
	for _, err := range startErrs {
		if errors.As(err, &refused) {
			return errors.Errorf(errFmtRestoreRefused, key, refused.Reason)
		}
	}
	return nil
}

// restoredKey is the key of the backup the cluster was restored from, if it was.
func restoredKey(cr *v1alpha1.EtcdCluster) string {
	if r := cr.Status.AtProvider.RestoredFrom; r != nil {
		return r.Key
	}
	return ""
}
