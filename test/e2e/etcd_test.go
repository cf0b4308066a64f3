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

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stackservices/provider-stackservices/test/harness"
)

// TestEtcdDatabaseClaim applies the EtcdDatabase claim of examples/claims, uses the Secret the
// app namespace gets with clientv3 over TLS, scales the claim down and sees the membership
// follow, and deletes the claim: the cluster goes with it.
func TestEtcdDatabaseClaim(t *testing.T) {
	e := setup(t)
	e.setUp(t)
	ctx := harness.Ctx(t)

	start := time.Now()
	claim := e.apply(t, repo("examples", "claims", "etcddatabase.yaml"))[0]
	claim = e.waitReady(t, claim, 3*time.Minute)
	t.Logf("EtcdDatabase: claim apply to Ready in %s", time.Since(start).Round(100*time.Millisecond))

	sec := &corev1.Secret{}
	harness.Eventually(t, time.Minute, "the app's Secret", func() error {
		if err := e.kube.Get(ctx, types.NamespacedName{Namespace: appNamespace, Name: claim.GetName() + "-etcd"}, sec); err != nil {
			return err
		}
		for _, k := range []string{"endpoints", "ca.crt", "tls.crt", "tls.key"} {
			if len(sec.Data[k]) == 0 {
				return fmt.Errorf("no %s", k)
			}
		}
		return nil
	})
	c, err := etcdFromSecret(sec)
	if err != nil {
		t.Fatalf("an app cannot use the Secret: %v", err)
	}
	defer c.Close() //nolint:errcheck // Test cleanup.
	if err := etcdPutGet(ctx, c); err != nil {
		t.Fatalf("an app cannot use the Secret: %v", err)
	}

	// The claim's change reaches the cluster: 3 members down to 1.
	start = time.Now()
	patched := claim.DeepCopy()
	if err := unstructured.SetNestedField(patched.Object, int64(1), "spec", "members"); err != nil {
		t.Fatal(err)
	}
	if err := e.kube.Patch(ctx, patched, client.MergeFrom(claim)); err != nil {
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

	e.deleteClaim(t, claim)
	harness.Eventually(t, time.Minute, "the cluster is gone with the claim", func() error {
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := c.Get(gctx, "greeting"); err == nil {
			return fmt.Errorf("the cluster still answers")
		}
		return nil
	})
}

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
