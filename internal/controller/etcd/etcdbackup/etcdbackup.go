// Package etcdbackup reconciles EtcdBackups: snapshots of an EtcdCluster taken on demand into
// an S3 bucket, stored as scheduled backups are (internal/etcd/backup), and deleted with the
// EtcdBackup unless its management policies leave out Delete.
package etcdbackup

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"filippo.io/age"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/internal/controller/etcd/authority"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
	"github.com/stackservices/provider-stackservices/internal/etcd/backup"
	"github.com/stackservices/provider-stackservices/internal/transfers"
)

const (
	errS3Client        = "cannot build the S3 client of the destination"
	errGetCluster      = "cannot get the EtcdCluster named in spec.forProvider.clusterRef"
	errFmtNotRunning   = "the EtcdCluster %s has not started yet: its snapshot is taken once it runs"
	errFmtNoMember     = "no member of the EtcdCluster %s is healthy: its last observation found none to take a snapshot from"
	errFmtNoCA         = "the CA Secret of the EtcdCluster %s is gone"
	errConnect         = "cannot connect to the cluster's member"
	errDescribe        = "cannot read the backup's metadata"
	errFmtChanged      = "the backup's metadata now records SHA-256 %s, but %s was stored: the objects were replaced outside the provider"
	errFmtSnapshotGone = "the backup's metadata is there but its snapshot %s is not (or has another size): it was deleted or replaced outside the provider"
	errList            = "cannot look for the backup's snapshot"
	errFmtWaits        = "waiting to take the snapshot: namespace %s streams another backup already, or the provider streams %d at once; retrying"

	reasonBackedUp = event.Reason("BackedUp")

	// reconcileTimeout bounds a reconcile: Create streams the whole database into the bucket
	// (in one of a few turns, see transfers.InReconcile, so that the controller's other
	// workers reconcile meanwhile).
	reconcileTimeout = 30 * time.Minute
	// readTimeout bounds Observe and Delete, which read and delete a few objects.
	readTimeout = 2 * time.Minute
)

// Kind is the managed resource kind this package reconciles.
var Kind = managedcontroller.Kind{
	GroupVersionKind: v1alpha1.EtcdBackupGroupVersionKind,
	Object:           &v1alpha1.EtcdBackup{},
	List:             &v1alpha1.EtcdBackupList{},
}

// clusterFactory connects to a cluster's members.
type clusterFactory func(ctx context.Context, endpoints []string, cfg *tls.Config) (etcdclient.Cluster, error)

// Setup adds a controller that reconciles EtcdBackups.
func Setup(mgr ctrl.Manager, o managedcontroller.Options) error {
	return managedcontroller.Setup(mgr, o, Kind,
		managedcontroller.WithExternalConnector[*v1alpha1.EtcdBackup](&connector{
			kube: mgr.GetClient(),
			newObjects: func(c s3.Config) (s3.Objects, error) {
				if o.WrapTransport != nil {
					return s3.New(c, s3.WithTransportWrapper(o.WrapTransport))
				}
				return s3.New(c)
			},
			newCluster: etcdclient.New,
			record:     managedcontroller.Recorder(mgr, Kind),
			transfers:  o.ReconcileTransfers(),
		}),
		// The key is the EtcdBackup's own (its namespace's prefix, its name, its UID's tag): a
		// create cut short is retried under the same key, and its unfinished upload aborted.
		managed.WithInitializers(),
		managed.WithDeterministicExternalName(true),
		managed.WithTimeout(reconcileTimeout),
	)
}

// SetupGated sets the controller up once the EtcdBackup CRD is established.
func SetupGated(mgr ctrl.Manager, o managedcontroller.Options) error {
	return managedcontroller.Gated(mgr, o, func() error { return Setup(mgr, o) }, Kind.GroupVersionKind)
}

type connector struct {
	kube       client.Client
	newObjects func(s3.Config) (s3.Objects, error)
	newCluster clusterFactory
	record     event.Recorder
	transfers  *transfers.Limiter
}

func (c *connector) Connect(ctx context.Context, cr *v1alpha1.EtcdBackup) (managed.TypedExternalClient[*v1alpha1.EtcdBackup], error) {
	loc, err := backup.LocateBackup(ctx, c.kube, cr)
	if err != nil {
		return nil, err
	}
	objs, err := c.newObjects(loc.S3)
	if err != nil {
		return nil, errors.Wrap(err, errS3Client)
	}
	st := backup.Store{Objects: objs, Bucket: loc.Bucket, Prefix: loc.Prefix, Owner: string(cr.GetUID())}
	return &external{kube: c.kube, store: st, newCluster: c.newCluster, record: c.record, transfers: c.transfers, now: time.Now}, nil
}

type external struct {
	kube       client.Client
	store      backup.Store
	newCluster clusterFactory
	record     event.Recorder
	transfers  *transfers.Limiter
	now        func() time.Time
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.EtcdBackup) (managed.ExternalObservation, error) {
	// Reads of a few bytes: they get far less than the reconcile's timeout, which is Create's.
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	key := e.store.Key(cr.GetName())
	md, err := backup.Describe(ctx, e.store, key)
	if s3.IsNoSuchKey(err) {
		if cr.Status.AtProvider.Key != "" && !meta.WasDeleted(cr) {
			// Taken once, gone now: taking another would pass a new snapshot off as this one.
			return managed.ExternalObservation{}, errors.Errorf(errFmtSnapshotGone, key)
		}
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errDescribe)
	}
	if meta.WasDeleted(cr) {
		return managed.ExternalObservation{ResourceExists: true}, nil
	}
	if want := cr.Status.AtProvider.SHA256; want != "" && md.SHA256 != want {
		return managed.ExternalObservation{}, errors.Errorf(errFmtChanged, md.SHA256, want)
	}
	if err := e.snapshotThere(ctx, md); err != nil {
		return managed.ExternalObservation{}, err
	}
	cr.Status.AtProvider = observation(e.store.Bucket, md)
	cr.SetConditions(xpv2.Available())
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, nil
}

// snapshotThere checks the snapshot object is there with the size its metadata records: a
// listing, not a read of the whole object, on every poll.
func (e *external) snapshotThere(ctx context.Context, md backup.Metadata) error {
	objs, err := e.store.Objects.ListObjects(ctx, e.store.Bucket, md.Key)
	if err != nil {
		return errors.Wrap(err, errList)
	}
	for _, o := range objs {
		if o.Key == md.Key && o.Size == md.Size {
			return nil
		}
	}
	return errors.Errorf(errFmtSnapshotGone, md.Key)
}

func observation(bucket string, md backup.Metadata) v1alpha1.EtcdBackupObservation {
	return v1alpha1.EtcdBackupObservation{
		Bucket: bucket, Key: md.Key, Size: md.Size, SHA256: md.SHA256, Revision: md.Revision,
		ClusterID: md.ClusterID, Member: md.Member, EtcdVersion: md.EtcdVersion, Time: &metav1.Time{Time: md.Time},
		Encrypted: md.Encrypted,
	}
}

// recipientsFor are the age recipients the backup is encrypted to: its own, else its
// cluster's scheduled backups' (so that an on-demand backup is never stored in the clear
// when the cluster's backups are not).
func recipientsFor(cr *v1alpha1.EtcdBackup, cluster *v1alpha1.EtcdCluster) ([]age.Recipient, error) {
	if enc := cr.Spec.ForProvider.Encryption; enc != nil {
		return backup.ParseRecipients("spec.forProvider.encryption.recipients", enc.Recipients)
	}
	if b := cluster.Spec.ForProvider.Backup; b != nil && b.Encryption != nil {
		return backup.ParseRecipients("the cluster's spec.forProvider.backup.encryption.recipients", b.Encryption.Recipients)
	}
	return nil, nil
}

// Create takes the snapshot, from a healthy follower of the cluster when there is one.
func (e *external) Create(ctx context.Context, cr *v1alpha1.EtcdBackup) (managed.ExternalCreation, error) {
	cluster := &v1alpha1.EtcdCluster{}
	name := cr.Spec.ForProvider.ClusterRef.Name
	if err := e.kube.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: name}, cluster); err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errGetCluster)
	}
	if meta.GetExternalName(cluster) == "" {
		return managed.ExternalCreation{}, errors.Errorf(errFmtNotRunning, name)
	}
	from, ok := memberToCopy(cluster.Status.AtProvider.Members)
	if !ok {
		return managed.ExternalCreation{}, errors.Errorf(errFmtNoMember, name)
	}
	a, found, err := authority.Load(ctx, e.kube, cluster)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	if !found {
		return managed.ExternalCreation{}, errors.Errorf(errFmtNoCA, name)
	}
	tlsCfg, err := a.TLSConfig()
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	recipients, err := recipientsFor(cr, cluster)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	release, ok := e.transfers.TryAcquire(cr.GetNamespace())
	if !ok {
		return managed.ExternalCreation{}, errors.Errorf(errFmtWaits, cr.GetNamespace(), e.transfers.Slots())
	}
	defer release()
	cl, err := e.newCluster(ctx, []string{from.ClientURL}, tlsCfg)
	if err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errConnect)
	}
	defer cl.Close() //nolint:errcheck // Nothing to do about a connection that fails to close.
	md, err := backup.Take(ctx, e.store, backup.Request{
		Name:    cr.GetName(),
		Cluster: cr.GetNamespace() + "/" + name, ClusterID: cluster.Status.AtProvider.ClusterID,
		Member: from.Name, EtcdVersion: cluster.Status.AtProvider.Version, Now: e.now(),
		Open:       func(ctx context.Context) (*etcdclient.Snapshot, error) { return cl.Snapshot(ctx, from.ClientURL) },
		Recipients: recipients,
	})
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	meta.SetExternalName(cr, md.Key)
	cr.Status.AtProvider = observation(e.store.Bucket, md)
	e.record.Event(cr, event.Normal(reasonBackedUp, fmt.Sprintf("Stored %s (%d bytes, revision %d) from member %s", md.Key, md.Size, md.Revision, md.Member)))
	return managed.ExternalCreation{}, nil
}

// memberToCopy is a healthy voter that does not lead (the leader has the most to do), else
// the leader, from the cluster's last observation.
func memberToCopy(ms []v1alpha1.MemberObservation) (v1alpha1.MemberObservation, bool) {
	var leader *v1alpha1.MemberObservation
	for i := range ms {
		m := &ms[i]
		if !m.Healthy || m.Learner || m.ID == "" || m.ClientURL == "" {
			continue
		}
		if !m.Leader {
			return *m, true
		}
		leader = m
	}
	if leader == nil {
		return v1alpha1.MemberObservation{}, false
	}
	return *leader, true
}

// Update has nothing to do: the spec cannot change.
func (e *external) Update(_ context.Context, _ *v1alpha1.EtcdBackup) (managed.ExternalUpdate, error) {
	return managed.ExternalUpdate{}, nil
}

// Delete deletes the snapshot and its metadata.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.EtcdBackup) (managed.ExternalDelete, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	return managed.ExternalDelete{}, backup.Remove(ctx, e.store, e.store.Key(cr.GetName()))
}

// Disconnect has nothing to release: S3 clients hold no connection of their own.
func (e *external) Disconnect(_ context.Context) error { return nil }
