//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// TestEtcdDatabase applies the EtcdDatabase xr of examples/claims, uses the Secret the
// app namespace gets with clientv3 over TLS, scales the xr down (after the backup a
// scale-in waits for) and sees the membership follow, and deletes the xr: the cluster goes
// with it, its backups stay, and a new xr is made from them.
func TestEtcdDatabase(t *testing.T) {
	e := setup(t)
	e.setUp(t)
	ctx := harness.Ctx(t)

	start := time.Now()
	xr := e.apply(t, repo("examples", "claims", "etcddatabase.yaml"))[0]
	xr = e.waitReady(t, xr, 3*time.Minute)
	t.Logf("EtcdDatabase: xr apply to Ready in %s", time.Since(start).Round(100*time.Millisecond))

	sec := &corev1.Secret{}
	harness.Eventually(t, time.Minute, "the app's Secret", func() error {
		if err := e.kube.Get(ctx, types.NamespacedName{Namespace: appNamespace, Name: xr.GetName() + "-etcd"}, sec); err != nil {
			return err
		}
		for _, k := range []string{"endpoints", "ca.crt", "tls.crt", "tls.key"} {
			if len(sec.Data[k]) == 0 {
				return fmt.Errorf("no %s", k)
			}
		}
		return nil
	})
	// The composition names no machines: the members run on the servers the
	// ClusterProviderConfig's etcdMachines describe, on its subnet.
	for _, ep := range strings.Split(string(sec.Data["endpoints"]), ",") {
		if !strings.HasPrefix(ep, "https://"+etcdSubnetPrefix) {
			t.Errorf("endpoint %s is not on the subnet the ClusterProviderConfig names (%sx)", ep, etcdSubnetPrefix)
		}
	}
	c, err := etcdFromSecret(sec)
	if err != nil {
		t.Fatalf("an app cannot use the Secret: %v", err)
	}
	defer c.Close()
	if err := etcdPutGet(ctx, c); err != nil {
		t.Fatalf("an app cannot use the Secret: %v", err)
	}

	// The xr's change reaches the cluster: 3 members down to 1.
	start = time.Now()
	patched := xr.DeepCopy()
	if err := unstructured.SetNestedField(patched.Object, int64(1), "spec", "members"); err != nil {
		t.Fatal(err)
	}
	if err := e.kube.Patch(ctx, patched, client.MergeFrom(xr)); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 3*time.Minute, "one member left", func() error {
		mctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		r, err := c.MemberList(mctx)
		if err != nil {
			return err
		}
		if len(r.Members) != 1 {
			return fmt.Errorf("%d members", len(r.Members))
		}
		return nil
	})
	t.Logf("EtcdDatabase: members 3 -> 1 reached etcd in %s", time.Since(start).Round(100*time.Millisecond))
	if err := etcdPutGet(ctx, c); err != nil {
		t.Errorf("after scaling in: %v", err)
	}

	// The scale-in waited for a backup (beforeChanges), which the xr shows.
	xr = e.waitReady(t, xr, time.Minute)
	if last, _, _ := unstructured.NestedString(xr.Object, "status", "etcd", "lastBackup"); last == "" {
		t.Errorf("the xr shows no backup after a scale-in: status %v", xr.Object["status"])
	}

	e.deleteComposite(t, xr)
	harness.Eventually(t, time.Minute, "the cluster is gone with the xr", func() error {
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := c.Get(gctx, "greeting"); err == nil {
			return fmt.Errorf("the cluster still answers")
		}
		return nil
	})

	// The backups outlived the xr: a new one is made from them.
	start = time.Now()
	again := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": xr.GetAPIVersion(), "kind": xr.GetKind(),
		"metadata": map[string]any{"name": xr.GetName() + "-again", "namespace": appNamespace},
		"spec": map[string]any{
			"version": "3.6.16", "members": int64(1),
			"restoreFrom": map[string]any{"database": xr.GetName(), "before": time.Now().UTC().Format(time.RFC3339)},
		},
	}}
	if err := e.kube.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	again = e.waitReady(t, again, 3*time.Minute)
	t.Logf("EtcdDatabase: a xr restored from the backups of the deleted one was Ready in %s", time.Since(start).Round(100*time.Millisecond))
	if from, _, _ := unstructured.NestedString(again.Object, "status", "etcd", "restoredFrom"); !strings.HasPrefix(from, xr.GetName()+"/") {
		t.Errorf("the restored xr says it was restored from %q, want a backup under %s/", from, xr.GetName())
	}
	sec = &corev1.Secret{}
	harness.Eventually(t, time.Minute, "the restored xr's Secret", func() error {
		return e.kube.Get(ctx, types.NamespacedName{Namespace: appNamespace, Name: again.GetName() + "-etcd"}, sec)
	})
	rc, err := etcdFromSecret(sec)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if r, err := rc.Get(gctx, "greeting"); err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "hello" {
		t.Errorf("the restored database: greeting = %v (%v), want hello", r, err)
	}

	// The backups of both composites stay by design; the test empties and removes their buckets
	// so that test beds that keep their OpenStack do not collect them.
	keys := &corev1.Secret{}
	if err := e.kube.Get(ctx, types.NamespacedName{Namespace: appNamespace, Name: again.GetName() + "-etcd-backups-s3"}, keys); err != nil {
		t.Fatal(err)
	}
	e.deleteComposite(t, again)
	// Both clusters' servers went with them: no port is left on the members' network.
	nets, err := networks.List(e.neutron, networks.ListOpts{Name: etcdNetwork}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := networks.ExtractNetworks(nets)
	if err != nil || len(all) != 1 {
		t.Fatalf("network %s: %v (%v)", etcdNetwork, all, err)
	}
	pages, err := ports.List(e.neutron, ports.ListOpts{NetworkID: all[0].ID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left, err := ports.ExtractPorts(pages); err != nil || len(left) != 0 {
		t.Errorf("ports left on %s after both composites were deleted: %d (%v)", etcdNetwork, len(left), err)
	}
	s3c, err := s3.New(s3.Config{
		AccessKeyID: string(keys.Data["AWS_ACCESS_KEY_ID"]), SecretAccessKey: string(keys.Data["AWS_SECRET_ACCESS_KEY"]),
		Endpoint: string(keys.Data["S3_ENDPOINT"]), Region: string(keys.Data["AWS_REGION"]),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{appNamespace + "-" + xr.GetName() + "-etcd-backups", appNamespace + "-" + again.GetName() + "-etcd-backups"} {
		if err := s3c.EmptyBucket(ctx, b); err != nil {
			t.Errorf("emptying %s: %v", b, err)
		}
		if err := s3c.DeleteBucket(ctx, b); err != nil {
			t.Errorf("deleting %s: %v", b, err)
		}
	}
}

// The network (and subnet) of the servers of examples/providerconfig's etcdMachines, which
// cluster/openstack.sh makes in project demo.
const (
	etcdNetwork      = "etcd-members"
	etcdSubnetPrefix = "198.19.50."
)

// etcdFromSecret connects the way an app does: with nothing but the Secret.
func etcdFromSecret(sec *corev1.Secret) (*clientv3.Client, error) {
	cert, err := tls.X509KeyPair(sec.Data["tls.crt"], sec.Data["tls.key"])
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data["ca.crt"]) {
		return nil, fmt.Errorf("ca.crt holds no certificate")
	}
	return clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(string(sec.Data["endpoints"]), ","),
		TLS:         &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		DialTimeout: 5 * time.Second,
		// Follows the membership, as long-lived etcd clients do.
		AutoSyncInterval: time.Second,
		Logger:           zap.NewNop(),
	})
}

func etcdPutGet(ctx context.Context, c *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "greeting", "hello"); err != nil {
		return err
	}
	r, err := c.Get(ctx, "greeting")
	if err != nil {
		return err
	}
	if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "hello" {
		return fmt.Errorf("get greeting: %v", r.Kvs)
	}
	return nil
}
