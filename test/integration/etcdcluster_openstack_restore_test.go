//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	objv1alpha1 "github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// TestEtcdClusterOnOpenStackRestoredFromAMirror: a cluster restored from a backup onto Nova
// servers whose image has no etcd. Each server downloads the release of its version from the test bed's
// mirror and checks it against the SHA-256 the provider was given, then downloads the backup
// through a pre-signed URL (its user-data holds no S3 credentials), checks its size and
// SHA-256, restores it with etcdutl and starts. The restored cluster holds every key of the
// backup, at a revision moved on past it, and no server was given the S3 secret key. A
// tampered backup boots no server, and an encrypted one is refused before anything is made
// (its identity would stay in the servers' user-data). The servers boot from Cinder volumes,
// which go with them. A release the provider has no checksum for is a condition, before any
// port is made.
func TestEtcdClusterOnOpenStackRestoredFromAMirror(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	n := newNovaTest(t)
	ns, cc := n.ns, n.cc
	releaseURL := mustEnv(t, "TESTBED_ETCD_RELEASE_URL_TEMPLATE")
	onMirror := func(cr *v1alpha1.EtcdCluster, url string) *v1alpha1.EtcdCluster {
		m := n.machines(t, mustEnv(t, "TESTBED_FLAVOR_SMALL"))
		// Not where the test bed's image holds etcd: the servers must download it.
		m.EtcdPath, m.EtcdReleaseURL = "/opt/etcd-releases/v{version}/etcd", ptr.To(url)
		return onServers(cr, m)
	}

	// A release the platform team vouched for by no checksum is never downloaded: the
	// cluster says so and makes nothing.
	unknown := onMirror(newEtcdCluster(ns, "unknown-release", etcdNew, 1), strings.ReplaceAll(releaseURL, "linux-amd64", "linux-riscv64"))
	if err := env.Kube.Create(ctx, unknown); err != nil {
		t.Fatal(err)
	}

	// The backup: written through the endpoint servers reach the object store at (the
	// provider reaches it there too), so that the pre-signed URL of the restore works on
	// the servers.
	_, keys := readyContract(t, ns, "backup", objv1alpha1.ContractParameters{})
	keys.Endpoint = mustEnv(t, "TESTBED_S3_ENDPOINT_FOR_SERVERS")
	bucket, direct := backupBucket(t, env.Kube, ns, keys)
	// An age identity for the encrypted backup that servers must refuse.
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup-identity"}, StringData: map[string]string{"age.key": id.String()},
	}); err != nil {
		t.Fatal(err)
	}
	dest := inBucket(bucket)
	src := withBackup(newEtcdCluster(ns, "source", etcdNew, 1), dest, 2)
	runningCluster(t, src, clusterIs(1, etcdNew))
	c := etcdClient(t, ns, "source-etcd", false)
	for i := range 100 {
		etcdPut(t, c, fmt.Sprintf("/orders/%03d", i), fmt.Sprintf("order-%d-%s", i, strings.Repeat("o", i)))
	}
	want, oldRev := allKeys(t, c)
	src = backupsSince(t, src, time.Now(), 1)
	newest := src.Status.AtProvider.Backup.Stored[0]
	env.Mutate(t, client.ObjectKeyFromObject(src), src, func() { src.Spec.ForProvider.Backup = nil })
	// And an encrypted one, on demand.
	encrypted := newEtcdBackup(ns, "encrypted", "source", dest)
	encrypted.Spec.ForProvider.Encryption = &v1alpha1.Encryption{Recipients: []string{id.Recipient().String()}}
	if err := env.Kube.Create(ctx, encrypted); err != nil {
		t.Fatal(err)
	}
	waitFor(t, encrypted, "True", nil)

	// A backup changed after it was taken never reaches a server: the provider reads it
	// whole before any server boots.
	tamperedKey := tamperedCopy(t, direct, bucket, ns+"/source/", newest.Key)
	tampered := onMirror(newEtcdCluster(ns, "tampered", etcdNew, 3), releaseURL)
	tampered.Spec.ForProvider.Restore = &v1alpha1.Restore{Source: &dest, Key: &tamperedKey}
	if err := env.Kube.Create(ctx, tampered); err != nil {
		t.Fatal(err)
	}
	// An encrypted backup is refused for servers: its identity would stay in their
	// user-data.
	secret := onMirror(newEtcdCluster(ns, "secret", etcdNew, 3), releaseURL)
	secret.Spec.ForProvider.Restore = &v1alpha1.Restore{BackupRef: &v1alpha1.LocalObjectReference{Name: "encrypted"},
		Decryption: &v1alpha1.Decryption{IdentitySecretRef: v1alpha1.SecretKeyReference{Name: "backup-identity", Key: "age.key"}}}
	if err := env.Kube.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}

	// Booted from Cinder volumes made from the image.
	restored := onMirror(newEtcdCluster(ns, "restored", etcdNew, 3), releaseURL)
	restored.Spec.ForProvider.Machines.OpenStack.BootVolumeGiB = ptr.To[int32](1)
	restored.Spec.ForProvider.Restore = &v1alpha1.Restore{Source: &dest, Key: &newest.Key}
	start := time.Now()
	n.create(t, restored)
	waitCluster(t, restored, clusterIs(3, etcdNew))
	t.Logf("3 Nova servers restored from %s (%d bytes) with etcd from the mirror, Ready in %s",
		newest.Key, newest.Size, time.Since(start).Round(100*time.Millisecond))

	rc := etcdClient(t, ns, "restored-etcd", true)
	got, newRev := allKeys(t, rc)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys and values of the restored cluster (-backup +restored):\n%s", diff)
	}
	if newRev < newest.Revision+v1alpha1.DefaultBumpRevision || oldRev > newest.Revision {
		t.Errorf("restored revision %d, want at least %d + %d", newRev, newest.Revision, v1alpha1.DefaultBumpRevision)
	}
	if rf := restored.Status.AtProvider.RestoredFrom; rf == nil || rf.Key != newest.Key || rf.SHA256 != newest.SHA256 {
		t.Errorf("status.atProvider.restoredFrom %+v, want the backup %s", rf, newest.Key)
	}
	etcdPut(t, rc, "/after-restore", "yes")

	// Each server runs the release it downloaded (the image has none at etcdPath), holds no
	// S3 credentials, and the restore's files (URL, identity) are gone once the data is there.
	tag := "etcd-cluster:" + string(restored.GetUID())
	pages, err := servers.List(cc, servers.ListOpts{Tags: tag}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srvs, _ := servers.ExtractServers(pages)
	state := mustEnv(t, "HYPERVISOR_STATE")
	vols := map[string]bool{}
	for _, v := range bootVolumes(t, restored) {
		if v.Status != "in-use" || v.Size != 1 || len(v.Attachments) != 1 || v.Bootable != "true" {
			t.Errorf("boot volume %s: %s, %d GiB, attachments %v, bootable %s; want in use by its server, 1 GiB, from the image", v.Name, v.Status, v.Size, v.Attachments, v.Bootable)
			continue
		}
		vols[v.Attachments[0].ServerID] = true
	}
	for _, s := range srvs {
		if !vols[s.ID] {
			t.Errorf("server %s boots from no volume of the cluster", s.Name)
		}
		root := filepath.Join(state, "vms", s.ID, "root")
		if _, err := os.Stat(filepath.Join(root, "opt/etcd-releases/v"+etcdNew, "etcdutl")); err != nil {
			t.Errorf("server %s: the release from the mirror is not unpacked: %v", s.Name, err)
		}
		if _, err := os.Stat(filepath.Join(root, "etc/etcd/restore.env")); !os.IsNotExist(err) {
			t.Errorf("server %s: the restore's pre-signed URL is still on the server (%v)", s.Name, err)
		}
		ud, err := os.ReadFile(filepath.Join(state, "vms", s.ID, "user-data"))
		if err != nil {
			t.Fatal(err)
		}
		// The pre-signed URL names the access key ID (that is how S3 finds the signer);
		// the secret key, which signs anything, never leaves the provider.
		if strings.Contains(string(ud), keys.SecretAccessKey) {
			t.Errorf("server %s: its user-data holds the S3 secret key", s.Name)
		}
	}

	waitForConditionMessage(t, toUnstructured(t, unknown), "no SHA-256 is known for etcd-v"+etcdNew+"-linux-riscv64.tar.gz")
	noPorts(t, unknown)

	waitForConditionMessage(t, toUnstructured(t, secret), "restoring an encrypted backup onto OpenStack servers is not supported yet")
	noPorts(t, secret)
	waitForConditionMessage(t, toUnstructured(t, tampered), "cannot be restored")
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(tampered), tampered); err != nil {
		t.Fatal(err)
	}
	pages, err = servers.List(cc, servers.ListOpts{Tags: "etcd-cluster:" + string(tampered.GetUID())}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := servers.ExtractServers(pages); len(s) > 0 {
		t.Errorf("%d servers booted for a tampered backup, want none", len(s))
	}

	sg := memberGroupID(t, restored)
	for _, cr := range []*v1alpha1.EtcdCluster{restored, unknown, tampered, secret, src} {
		if err := env.Kube.Delete(ctx, cr); err != nil {
			t.Fatal(err)
		}
	}
	for _, cr := range []*v1alpha1.EtcdCluster{restored, unknown, tampered, secret, src} {
		gone(t, cr)
	}
	waitNothingLeft(t, cc, restored, sg)
}
