//go:build integration

package integration

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/ec2credentials"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	etcdv1alpha1 "github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	objv1alpha1 "github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/internal/machines/local"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// Crash safety: the provider is killed right after an external create succeeds (before it
// records anything of it) and restarted. It must end with exactly one external resource,
// recorded, and delete it with the managed resource: nothing leaked, nothing made twice.
// Each test runs its own control plane and provider, so that stopping it stops no other test.

// crashingEnv starts a control plane and a provider that crashes after the create crash
// matches, in a namespace of its own with the demo credentials.
func crashingEnv(t *testing.T, o harness.Options) (*harness.Env, string) {
	t.Helper()
	o.Poll = poll
	e, err := harness.Start(o)
	if err != nil {
		t.Fatalf("cannot start a second test bed: %v", err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	ns := uniqueName("crash")
	if err := e.NewNamespace(harness.Ctx(t), ns); err != nil {
		t.Fatal(err)
	}
	return e, ns
}

// crashAndRestart waits until the crash fired, gives the frozen provider a moment in which a
// provider that was not frozen would have recorded the create, and restarts it.
func crashAndRestart(t *testing.T, e *harness.Env, crash *harness.Crash) {
	t.Helper()
	select {
	case <-crash.Fired():
	case <-time.After(waitReady):
		t.Fatal("the create the test crashes after never happened")
	}
	time.Sleep(time.Second)
	if err := e.Restart(); err != nil {
		t.Fatalf("cannot restart the provider: %v", err)
	}
}

// requests counts the requests of the provider of e matching "METHOD path-suffix".
func requests(e *harness.Env, method, suffix string) int {
	all, _ := e.Requests.Since(0)
	n := 0
	for _, r := range all {
		if strings.HasPrefix(r, method+" ") && strings.HasSuffix(r, suffix) {
			n++
		}
	}
	return n
}

func waitReadyIn[T interface {
	client.Object
	resource.Conditioned
}](t *testing.T, e *harness.Env, obj T) {
	t.Helper()
	harness.Eventually(t, waitReady, fmt.Sprintf("%T %s Ready after the restart", obj, obj.GetName()), func() error {
		if err := e.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		return harness.ConditionIs(obj, xpv2.TypeReady, "True")
	})
}

func goneIn(t *testing.T, e *harness.Env, obj client.Object) {
	t.Helper()
	if err := e.Kube.Delete(harness.Ctx(t), obj); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, time.Minute, fmt.Sprintf("%T %s deleted", obj, obj.GetName()), func() error {
		err := e.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(obj), obj)
		if err == nil {
			return fmt.Errorf("still exists")
		}
		return client.IgnoreNotFound(err)
	})
}

func TestCrashAfterSecurityGroupCreate(t *testing.T) {
	t.Parallel()
	crash := &harness.Crash{Match: func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/security-groups")
	}}
	e, ns := crashingEnv(t, harness.Options{Crash: crash})
	sg := newSecurityGroup(ns, "survivor", v1alpha1.SecurityGroupParameters{Rules: []v1alpha1.SecurityGroupRule{rule("ingress", "IPv4", "tcp", 22, 22, "10.0.0.0/8")}})
	if err := e.Kube.Create(harness.Ctx(t), sg); err != nil {
		t.Fatal(err)
	}
	crashAndRestart(t, e, crash)
	waitReadyIn(t, e, sg)

	tagged := func() []groups.SecGroup {
		pages, err := groups.List(env.Neutron, groups.ListOpts{Tags: "crossplane-uid:" + string(sg.GetUID())}).AllPages(harness.Ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		gs, err := groups.ExtractGroups(pages)
		if err != nil {
			t.Fatal(err)
		}
		return gs
	}
	gs := tagged()
	if len(gs) != 1 || gs[0].ID != meta.GetExternalName(sg) {
		t.Fatalf("groups made for the resource: %d, want exactly one with the external name %q", len(gs), meta.GetExternalName(sg))
	}
	if n := requests(e, "POST", "/security-groups"); n != 1 {
		t.Errorf("the provider created %d groups, want 1", n)
	}
	waitForNeutronRules(t, gs[0].ID, egress4, egress6, "ingress/IPv4/tcp/22-22/10.0.0.0/8")
	harness.Eventually(t, waitReady, "the adopted group's description as declared", func() error {
		got, err := groups.Get(harness.Ctx(t), env.Neutron, gs[0].ID).Extract()
		if err != nil {
			return err
		}
		if got.Description != "" || !slices.Contains(got.Tags, "crossplane-uid:"+string(sg.GetUID())) {
			return fmt.Errorf("description %q, tags %v", got.Description, got.Tags)
		}
		return nil
	})
	goneIn(t, e, sg)
	if gs := tagged(); len(gs) != 0 {
		t.Errorf("%d groups left after the delete", len(gs))
	}
}

func TestCrashAfterContractCreate(t *testing.T) {
	t.Parallel()
	crash := &harness.Crash{Match: func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v3/credentials")
	}}
	e, ns := crashingEnv(t, harness.Options{Crash: crash})
	c := newContract(ns, "survivor", objv1alpha1.ContractParameters{})
	if err := e.Kube.Create(harness.Ctx(t), c); err != nil {
		t.Fatal(err)
	}
	crashAndRestart(t, e, crash)
	waitReadyIn(t, e, c)
	access := meta.GetExternalName(c)
	if access == "" || c.GetAnnotations()["objectstorage.stackservices.io/pending-access-key"] != "" {
		t.Fatalf("after the restart: external name %q, annotations %v; want the key recorded and nothing pending", access, c.GetAnnotations())
	}
	if n := requests(e, "POST", "/v3/credentials"); n != 1 {
		t.Errorf("the provider created %d EC2 credentials, want 1", n)
	}
	keys := demoEC2Keys(t, c.Status.AtProvider.UserID)
	if !slices.Contains(keys, access) {
		t.Fatalf("the recorded key %s is not in Keystone", access)
	}
	goneIn(t, e, c)
	if slices.Contains(demoEC2Keys(t, c.Status.AtProvider.UserID), access) {
		t.Errorf("the key %s outlived its Contract", access)
	}
}

// demoEC2Keys lists the access keys of the demo user's EC2 credentials.
func demoEC2Keys(t *testing.T, userID string) []string {
	t.Helper()
	cloud, err := openstack.ParseCredentials(env.CloudsYAML, openstack.ParseOptions{Cloud: harness.CloudDemo})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := goopenstack.AuthenticatedClient(harness.Ctx(t), cloud.Auth)
	if err != nil {
		t.Fatal(err)
	}
	id, err := goopenstack.NewIdentityV3(pc, cloud.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := ec2credentials.List(id, userID).AllPages(harness.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := ec2credentials.ExtractCredentials(pages)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(creds))
	for _, c := range creds {
		out = append(out, c.Access)
	}
	return out
}

func TestCrashAfterBucketCreate(t *testing.T) {
	t.Parallel()
	var name string
	crash := &harness.Crash{Match: func(r *http.Request) bool {
		return r.Method == http.MethodPut && r.URL.Path == "/"+name && r.URL.RawQuery == ""
	}}
	e, ns := crashingEnv(t, harness.Options{Crash: crash})
	name = bucketName(ns, "survivor")
	c := newContract(ns, "keys", objv1alpha1.ContractParameters{})
	if err := e.Kube.Create(harness.Ctx(t), c); err != nil {
		t.Fatal(err)
	}
	waitReadyIn(t, e, c)
	b := newBucket(ns, "survivor", objv1alpha1.BucketParameters{BucketName: ptr.To(name), ContractRef: &xpv2.Reference{Name: "keys"}})
	if err := e.Kube.Create(harness.Ctx(t), b); err != nil {
		t.Fatal(err)
	}
	crashAndRestart(t, e, crash)
	waitReadyIn(t, e, b)
	if meta.GetExternalName(b) != name {
		t.Fatalf("external name %q after the restart, want %q", meta.GetExternalName(b), name)
	}
	if n := requests(e, "PUT", "/"+name); n != 1 {
		t.Errorf("the provider created the bucket %d times, want 1", n)
	}
	cfg, err := keysOfIn(t, e, ns, c)
	if err != nil {
		t.Fatal(err)
	}
	direct := s3Client(t, cfg)
	// The bucket is the resource's: deleting the resource deletes it.
	goneIn(t, e, b)
	if ok, err := direct.BucketExists(harness.Ctx(t), name); err != nil || ok {
		t.Errorf("the bucket outlived its Bucket (exists %v, error %v)", ok, err)
	}
}

// keysOfIn reads the S3 keys a Contract of e published.
func keysOfIn(t *testing.T, e *harness.Env, ns string, c *objv1alpha1.Contract) (s3.Config, error) {
	t.Helper()
	var cfg s3.Config
	var err error
	harness.Eventually(t, waitReady, "the Contract's keys", func() error {
		cfg, err = keysIn(e.Kube, ns, c.Spec.WriteConnectionSecretToReference.Name)
		return err
	})
	return cfg, err
}

// Finding 6: a rotation that could not record its new key deleted it and dropped the delete's
// error. Killed right after the rotation made its new key, the provider must finish that
// rotation after a restart: the new key published, the old one kept for its grace period,
// no third key, and both revoked with the Contract.
func TestCrashDuringContractRotation(t *testing.T) {
	t.Parallel()
	var posts atomic.Int32
	crash := &harness.Crash{Match: func(r *http.Request) bool {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v3/credentials") {
			return false
		}
		return posts.Add(1) == 2 // the first is the Contract's create; the second its rotation
	}}
	e, ns := crashingEnv(t, harness.Options{Crash: crash})
	c := newContract(ns, "rotating", objv1alpha1.ContractParameters{Rotation: &objv1alpha1.KeyRotation{Request: ptr.To("one")}})
	if err := e.Kube.Create(harness.Ctx(t), c); err != nil {
		t.Fatal(err)
	}
	waitReadyIn(t, e, c)
	first := meta.GetExternalName(c)
	if err := e.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(c), c); err != nil {
		t.Fatal(err)
	}
	c.Spec.ForProvider.Rotation.Request = ptr.To("two")
	if err := e.Kube.Update(harness.Ctx(t), c); err != nil {
		t.Fatal(err)
	}
	crashAndRestart(t, e, crash)
	harness.Eventually(t, waitReady, "the rotation finished after the restart", func() error {
		if err := e.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		if meta.GetExternalName(c) == first || c.Status.AtProvider.PreviousAccessKeyID != first {
			return fmt.Errorf("current %s, previous %s (first key %s)", meta.GetExternalName(c), c.Status.AtProvider.PreviousAccessKeyID, first)
		}
		return harness.ConditionIs(c, xpv2.TypeReady, "True")
	})
	second := meta.GetExternalName(c)
	if n := requests(e, "POST", "/v3/credentials"); n != 2 {
		t.Errorf("the provider created %d EC2 credentials, want 2 (the create and one rotation)", n)
	}
	keys := demoEC2Keys(t, c.Status.AtProvider.UserID)
	if !slices.Contains(keys, first) || !slices.Contains(keys, second) {
		t.Errorf("Keystone holds %v, want both %s (in its grace period) and %s", keys, first, second)
	}
	cfg, err := keysOfIn(t, e, ns, c)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AccessKeyID != second {
		t.Errorf("the Secret holds %s, want the rotated key %s", cfg.AccessKeyID, second)
	}
	goneIn(t, e, c)
	keys = demoEC2Keys(t, c.Status.AtProvider.UserID)
	if slices.Contains(keys, first) || slices.Contains(keys, second) {
		t.Errorf("keys outlived their Contract: %v", keys)
	}
}

// An etcd member's create is its machine's start. Killed right after a member of a scale-out
// started, the provider finishes the scale-out after a restart: the started member is
// promoted, not replaced, no machine is thrown away and no name given twice.
func TestCrashAfterEtcdMemberStart(t *testing.T) {
	t.Parallel()
	name := "scaling"
	crash := &harness.Crash{AfterMachineStart: func(_, member string) bool { return member == name+"-3" }}
	e, _ := crashingEnv(t, harness.Options{Crash: crash, MachineAddresses: local.AddressRange{
		First: netip.MustParseAddr("127.0.6.1"), Last: netip.MustParseAddr("127.0.6.254"),
	}})
	ns := uniqueName("etcd-crash")
	if err := e.Kube.Create(harness.Ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cr := newEtcdCluster(ns, name, etcdNew, 3)
	if err := e.Kube.Create(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cr)
	waitClusterIn := func(want func(*etcdv1alpha1.EtcdCluster) error) {
		t.Helper()
		harness.Eventually(t, 3*time.Minute, "EtcdCluster "+key.String()+" as asked", func() error {
			if err := e.Kube.Get(harness.Ctx(t), key, cr); err != nil {
				return err
			}
			return want(cr)
		})
	}
	waitClusterIn(clusterIs(3, etcdNew))
	if err := e.Kube.Get(harness.Ctx(t), key, cr); err != nil {
		t.Fatal(err)
	}
	cr.Spec.ForProvider.Members = 5
	if err := e.Kube.Update(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	crashAndRestart(t, e, crash)
	waitClusterIn(clusterIs(5, etcdNew))

	ms, err := e.Machines.List(harness.Ctx(t), string(cr.GetUID()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	want := []string{name + "-0", name + "-1", name + "-2", name + "-3", name + "-4"}
	if !slices.Equal(names, want) {
		t.Errorf("machines after the restart: %v, want %v (one machine per member, no name given twice)", names, want)
	}
	events := &corev1.EventList{}
	if err := e.Kube.List(harness.Ctx(t), events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.Reason == "DeletedMachine" || ev.Reason == "RemovedMember" {
			t.Errorf("%s: %s (a started member was thrown away)", ev.Reason, ev.Message)
		}
	}
	goneIn(t, e, cr)
}

// TestCrashDuringEtcdBackupUpload: the provider is killed in the middle of a backup's upload
// (after its second part). No snapshot object appears, the upload it left unfinished is
// aborted by the next backup, and that backup succeeds.
func TestCrashDuringEtcdBackupUpload(t *testing.T) {
	t.Parallel()
	crash := &harness.Crash{Match: func(r *http.Request) bool {
		return r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "2"
	}}
	e, _ := crashingEnv(t, harness.Options{Crash: crash, MachineAddresses: local.AddressRange{
		First: netip.MustParseAddr("127.0.7.1"), Last: netip.MustParseAddr("127.0.7.254"),
	}})
	ctx := harness.Ctx(t)
	ns := uniqueName("backup-crash")
	if err := e.Kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	bucket, direct := backupBucket(t, e.Kube, ns, vgwConfig(t))

	cr := newEtcdCluster(ns, "big", etcdNew, 1)
	if err := e.Kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cr)
	waitIn := func(what string, want func(*etcdv1alpha1.EtcdCluster) error) {
		t.Helper()
		harness.Eventually(t, 3*time.Minute, what, func() error {
			if err := e.Kube.Get(ctx, key, cr); err != nil {
				return err
			}
			return want(cr)
		})
	}
	waitIn("the cluster running", clusterIs(1, etcdNew))
	// A database of more than two parts (8 MiB each).
	c := connect(t, etcdConfigIn(t, e.Kube, ns, "big-etcd"))
	value := strings.Repeat("v", 1<<20)
	for i := range 20 {
		etcdPut(t, c, fmt.Sprintf("/big/%02d", i), value)
	}

	e.Mutate(t, key, cr, func() {
		withBackup(cr, etcdv1alpha1.BackupDestination{BucketName: &bucket, CredentialsSecretRef: &etcdv1alpha1.LocalObjectReference{Name: "s3"}}, 3)
	})
	crashAndRestart(t, e, crash)
	prefix := ns + "/big/"
	ups, err := direct.ListUploads(ctx, bucket, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) == 0 {
		t.Error("the killed provider left no unfinished upload: the crash did not happen mid-upload")
	}
	if _, snaps := storedBackups(t, direct, bucket, prefix); len(snaps) != 0 {
		t.Errorf("snapshots after a crash mid-upload: %v, want none", snaps)
	}

	restarted := time.Now()
	waitIn("a backup after the restart", func(cr *etcdv1alpha1.EtcdCluster) error {
		b := cr.Status.AtProvider.Backup
		if b == nil || b.LastSuccessTime == nil || !b.LastSuccessTime.After(restarted) {
			return fmt.Errorf("no backup since the restart: %+v", b)
		}
		return nil
	})
	if ups, err := direct.ListUploads(ctx, bucket, prefix); err != nil || len(ups) != 0 {
		t.Errorf("unfinished uploads after the next backup: %v (%v), want none", ups, err)
	}
	mds, snaps := storedBackups(t, direct, bucket, prefix)
	if len(snaps) == 0 || len(mds) != len(snaps) {
		t.Fatalf("%d snapshots and %d metadata after the restart, want one of each per backup", len(snaps), len(mds))
	}
	for k, md := range mds {
		sum, n := sha256Of(t, direct, bucket, k)
		if sum != md.SHA256 || n != md.Size || n < 20<<20 {
			t.Errorf("%s: sha256 %s (%d bytes), metadata %s (%d); want them equal and over 20 MiB", k, sum, n, md.SHA256, md.Size)
		}
	}
	goneIn(t, e, cr)
}
