package contract

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	etcdv1alpha1 "github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
)

func TestUsers(t *testing.T) {
	s := kruntime.NewScheme()
	if err := v1alpha1.SchemeBuilder.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1alpha1.SchemeBuilder.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	bucket := func(ns, name, contract string) client.Object {
		b := &v1alpha1.Bucket{}
		b.SetNamespace(ns)
		b.SetName(name)
		b.Spec.ForProvider.ContractName = ptr.To(contract)
		return b
	}
	to := func(contract string) etcdv1alpha1.BackupDestination {
		return etcdv1alpha1.BackupDestination{BucketName: ptr.To("b"), ContractRef: &etcdv1alpha1.LocalObjectReference{Name: contract}}
	}
	backups := &etcdv1alpha1.EtcdCluster{}
	backups.SetNamespace("shop")
	backups.SetName("backed-up")
	backups.Spec.ForProvider.Backup = &etcdv1alpha1.Backup{Destination: to("keys")}
	restored := &etcdv1alpha1.EtcdCluster{}
	restored.SetNamespace("shop")
	restored.SetName("restored")
	src := to("keys")
	restored.Spec.ForProvider.Restore = &etcdv1alpha1.Restore{Source: &src, Key: ptr.To("k")}
	other := &etcdv1alpha1.EtcdCluster{}
	other.SetNamespace("shop")
	other.SetName("other-keys")
	other.Spec.ForProvider.Backup = &etcdv1alpha1.Backup{Destination: to("other")}
	onDemand := &etcdv1alpha1.EtcdBackup{}
	onDemand.SetNamespace("shop")
	onDemand.SetName("now")
	onDemand.Spec.ForProvider.Destination = to("keys")

	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(
		bucket("shop", "data", "keys"),
		bucket("shop", "logs", "other"),
		// A Contract of the same name in another namespace is another Contract.
		bucket("elsewhere", "data", "keys"),
		backups, restored, other, onDemand,
	).Build()
	cr := &v1alpha1.Contract{}
	cr.SetNamespace("shop")
	cr.SetName("keys")
	got, err := users(context.Background(), kube, cr)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Bucket data", "EtcdBackup now", "EtcdCluster backed-up", "EtcdCluster restored"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("users: -want, +got:\n%s", diff)
	}
}

// A composite deletes its Contract and Bucket at once: the keys must stay until the Bucket,
// which needs them to delete its bucket, is gone.
func TestDeleteWaitsForUsers(t *testing.T) {
	ctx := context.Background()
	now := t0
	k := &fakeKeystone{creds: map[string]openstack.EC2Credential{"KEY": {Access: "KEY", Secret: "S", Owner: "uid"}}}
	e := newExternal(k, nopAnnotator{}, &now)
	using := []string{"Bucket data"}
	e.users = func(context.Context) ([]string, error) { return using, nil }
	cr := &v1alpha1.Contract{}
	cr.SetUID("uid")
	meta.SetExternalName(cr, "KEY")

	if _, err := e.Delete(ctx, cr); err == nil || !strings.Contains(err.Error(), "still used by Bucket data") {
		t.Errorf("Delete while a Bucket uses the keys: %v, want a refusal naming the Bucket", err)
	}
	if _, ok := k.creds["KEY"]; !ok {
		t.Fatal("the keys were revoked while a Bucket still used them")
	}
	using = nil
	if _, err := e.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if _, ok := k.creds["KEY"]; ok {
		t.Error("the keys outlived their last user")
	}
}
