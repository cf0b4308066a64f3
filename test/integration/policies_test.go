//go:build integration

package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/credentials"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	etcdv1alpha1 "github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	objv1alpha1 "github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// withoutCreate are management policies that include Update but leave out Create (one of
// the two such sets crossplane-runtime supports): it then calls Update on an external
// resource that does not exist (crossplane/crossplane-runtime#1129).
var withoutCreate = xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize}

// TestUpdateWithoutCreateMakesNothing: for every kind, a resource whose management policies
// leave out Create, and whose external resource does not exist, gets a condition that says
// so, and nothing is made in the backend: no group, no attachment, no bucket, no access key,
// no etcd machine, no backup object.
func TestUpdateWithoutCreateMakesNothing(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := harness.Ctx(t)
	notCreated := managedcontroller.ErrNotCreated[:60]
	// settle gives the provider a few more reconciles to do the wrong thing.
	settle := func() { time.Sleep(3 * time.Second) }
	// Credentials of versitygw, for the Bucket and the EtcdBackup.
	direct := vgwSecret(t, ns, "s3", os.Getenv("VGW_ACCESS_KEY"), os.Getenv("VGW_SECRET_KEY"))

	t.Run("SecurityGroup", func(t *testing.T) {
		t.Parallel()
		name := uniqueName("no-create-sg")
		cr := newSecurityGroup(ns, name, v1alpha1.SecurityGroupParameters{Rules: []v1alpha1.SecurityGroupRule{rule("ingress", "IPv4", "tcp", 22, 22, "198.18.0.0/24")}})
		cr.Spec.ManagementPolicies = withoutCreate
		if err := env.Kube.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		waitForConditionMessage(t, toUnstructured(t, cr), notCreated)
		settle()
		pages, err := groups.List(env.Neutron, groups.ListOpts{Name: name}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if gs, _ := groups.ExtractGroups(pages); len(gs) != 0 {
			t.Errorf("%d security groups named %s, want none", len(gs), name)
		}
	})

	t.Run("SecurityGroupAttachment", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, ns)
		sg := readySecurityGroup(t, ns, "no-create-attach")
		server := w.server("", 1, nil, false)
		att := newAttachment(ns, "no-create", v1alpha1.SecurityGroupAttachmentParameters{SecurityGroupID: ptr.To(sg), ServerIDs: []string{server.id}})
		att.Spec.ManagementPolicies = withoutCreate
		if err := env.Kube.Create(ctx, att); err != nil {
			t.Fatal(err)
		}
		waitForConditionMessage(t, toUnstructured(t, att), notCreated)
		settle()
		for _, got := range groupsOf(t, server) {
			if len(got) != 0 {
				t.Errorf("the server's port has groups %v, want none: nothing may be attached", got)
			}
		}
	})

	t.Run("Bucket", func(t *testing.T) {
		t.Parallel()
		name := bucketName(ns, "no-create")
		cr := newBucket(ns, "no-create", objv1alpha1.BucketParameters{BucketName: &name, CredentialsSecretRef: &xpv2.LocalSecretReference{Name: "s3"}})
		cr.Spec.ManagementPolicies = withoutCreate
		if err := env.Kube.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		waitForConditionMessage(t, toUnstructured(t, cr), notCreated)
		settle()
		if ok, err := direct.BucketExists(ctx, name); err != nil || ok {
			t.Errorf("bucket %s exists: %v (%v), want it never made", name, ok, err)
		}
	})

	t.Run("Contract", func(t *testing.T) {
		t.Parallel()
		cr := newContract(ns, "no-create", objv1alpha1.ContractParameters{})
		cr.Spec.ManagementPolicies = withoutCreate
		if err := env.Kube.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		waitForConditionMessage(t, toUnstructured(t, cr), notCreated)
		settle()
		// crossplane-runtime publishes what Observe found (nothing) into the Secret.
		s := &corev1.Secret{}
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "no-create-s3"}, s); client.IgnoreNotFound(err) != nil || len(s.Data) != 0 {
			t.Errorf("the connection Secret holds %v (%v), want no keys", dataKeys(s), err)
		}
		id, err := env.AdminIdentity(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages, err := credentials.List(id, credentials.ListOpts{Type: "ec2"}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all, err := credentials.ExtractCredentials(pages)
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			t.Fatal(err)
		}
		for _, c := range all {
			if strings.Contains(c.Blob, string(cr.GetUID())) {
				t.Errorf("an EC2 credential (%s) was made for the Contract", c.ID)
			}
		}
	})

	t.Run("EtcdCluster", func(t *testing.T) {
		t.Parallel()
		cr := newEtcdCluster(ns, "no-create", etcdNew, 1)
		cr.Spec.ManagementPolicies = withoutCreate
		if err := env.Kube.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
		waitForConditionMessage(t, toUnstructured(t, cr), notCreated)
		settle()
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			t.Fatal(err)
		}
		if ms, err := env.Machines.List(ctx, string(cr.GetUID())); err != nil || len(ms) != 0 {
			t.Errorf("%d machines (%v), want none", len(ms), err)
		}
	})

	t.Run("EtcdBackup", func(t *testing.T) {
		t.Parallel()
		bucket := bucketName(ns, "no-create-backups")
		if err := direct.CreateBucket(ctx, bucket); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = direct.DeleteBucket(context.Background(), bucket) })
		b := &etcdv1alpha1.EtcdBackup{}
		b.SetNamespace(ns)
		b.SetName("no-create")
		b.Spec.ManagementPolicies = withoutCreate
		b.Spec.ForProvider = etcdv1alpha1.EtcdBackupParameters{
			ClusterRef:  etcdv1alpha1.LocalObjectReference{Name: "any"},
			Destination: etcdv1alpha1.BackupDestination{BucketName: &bucket, CredentialsSecretRef: &etcdv1alpha1.LocalObjectReference{Name: "s3"}},
		}
		if err := env.Kube.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		waitForConditionMessage(t, toUnstructured(t, b), notCreated)
		if objs, err := direct.ListObjects(context.Background(), bucket, ""); err != nil || len(objs) != 0 {
			t.Errorf("%d objects in the bucket (%v), want none", len(objs), err)
		}
	})
}
