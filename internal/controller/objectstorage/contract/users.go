package contract

import (
	"context"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	etcdv1alpha1 "github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
)

const (
	errListUsers = "cannot list what uses the Contract's keys"
	errFmtInUse  = "the Contract's keys are still used by %s: the keys are revoked only once those are gone, since deleting a bucket or its backups needs them"
)

// users lists the objects of the Contract's namespace that take their S3 keys from it: a
// Bucket (which needs the keys to delete its bucket), an EtcdCluster or an EtcdBackup whose
// backups or restore name it. Objects being deleted count: they need the keys to finish. A
// composite deleted in the background (kubectl's default) deletes its parts at once: this is
// what orders their deletion, and the connection Secret lives as long as the Contract.
//
// A foreground deletion is different: it deletes the Contract's connection Secret (a
// dependent) first, and crossplane-runtime delays the Contract's own deletion until it is
// gone, so a Bucket still deleting its bucket loses its keys. A Secret finalizer cannot bridge
// that (the Contract would wait for the Secret, the Secret for the Contract); Crossplane's
// answer is a Usage of the Contract by the Bucket, which refuses the Contract's deletion.
func users(ctx context.Context, kube client.Reader, cr *v1alpha1.Contract) ([]string, error) {
	ns, name := client.InNamespace(cr.GetNamespace()), cr.GetName()
	var found []string
	buckets := &v1alpha1.BucketList{}
	if err := kube.List(ctx, buckets, ns); err != nil {
		return nil, errors.Wrap(err, errListUsers)
	}
	for _, b := range buckets.Items {
		if n := b.Spec.ForProvider.ContractName; n != nil && *n == name {
			found = append(found, "Bucket "+b.GetName())
		}
	}
	clusters := &etcdv1alpha1.EtcdClusterList{}
	if err := kube.List(ctx, clusters, ns); err != nil {
		return nil, errors.Wrap(err, errListUsers)
	}
	for _, c := range clusters.Items {
		p := c.Spec.ForProvider
		if (p.Backup != nil && usesContract(&p.Backup.Destination, name)) ||
			(p.Restore != nil && usesContract(p.Restore.Source, name)) {
			found = append(found, "EtcdCluster "+c.GetName())
		}
	}
	backups := &etcdv1alpha1.EtcdBackupList{}
	if err := kube.List(ctx, backups, ns); err != nil {
		return nil, errors.Wrap(err, errListUsers)
	}
	for _, b := range backups.Items {
		if usesContract(&b.Spec.ForProvider.Destination, name) {
			found = append(found, "EtcdBackup "+b.GetName())
		}
	}
	sort.Strings(found)
	return found, nil
}

func usesContract(d *etcdv1alpha1.BackupDestination, name string) bool {
	return d != nil && d.ContractRef != nil && d.ContractRef.Name == name
}
