//go:build integration

package etcdcluster

import (
	"context"
	"net/netip"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
	"github.com/stackservices/provider-stackservices/internal/controller/etcd/authority"
	"github.com/stackservices/provider-stackservices/internal/machines"
	"github.com/stackservices/provider-stackservices/internal/machines/local"
	"github.com/stackservices/provider-stackservices/test/bench"
)

// BenchmarkObserve measures one steady-state Observe of a real 3-member cluster (local
// machines, etcd from ETCD_BINARIES_DIR) next to its floor: the same membership and status
// calls made directly on one client that stays connected. Observe keeps its client between
// reconciles as the provider does (KeptConnections), or connects anew each time, with a TLS
// handshake to every member (NewConnections). Both run interleaved with the floor in the same
// loop, so the ratio holds on a noisy machine. The CA Secret lives in an in-memory Kubernetes
// client: only etcd is measured.
//
//	make bench
func BenchmarkObserve(b *testing.B) {
	ctx := context.Background()
	binaries := os.Getenv("ETCD_BINARIES_DIR")
	if binaries == "" {
		b.Fatal("ETCD_BINARIES_DIR is not set (run `make bench`)")
	}
	lm, err := local.New(local.Options{Dir: b.TempDir(), BinariesDir: binaries, AddressRange: local.AddressRange{
		First: mustAddr("127.0.7.1"), Last: mustAddr("127.0.7.254"),
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = lm.Purge(context.Background()) }()

	s := kruntime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	kube := fake.NewClientBuilder().WithScheme(s).Build()
	cr := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "bench", UID: "bench-uid"},
		Spec:       v1alpha1.EtcdClusterSpec{ForProvider: v1alpha1.EtcdClusterParameters{Version: "3.6.16", Members: 3}},
	}
	e := &external{kube: kube, machines: lm, newCluster: etcdclient.New, record: event.NewNopRecorder(), now: time.Now, sleep: machines.Sleep}
	defer func() { _ = e.Disconnect(ctx) }()
	if _, err := e.Create(ctx, cr); err != nil {
		b.Fatal(err)
	}
	if o, err := e.Observe(ctx, cr); err != nil || !o.ResourceUpToDate {
		b.Fatalf("after create: up to date %v, error %v", o.ResourceUpToDate, err)
	}

	a, _, err := authority.Load(ctx, kube, cr)
	if err != nil {
		b.Fatal(err)
	}
	tlsCfg, err := a.TLSConfig()
	if err != nil {
		b.Fatal(err)
	}
	endpoints := cr.Status.AtProvider.Endpoints
	direct, err := etcdclient.New(ctx, endpoints, tlsCfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = direct.Close() }()
	// The members' statuses are asked all at once, as Observe asks them.
	floor := func() {
		if _, _, err := direct.Members(ctx); err != nil {
			b.Fatal(err)
		}
		errs := make(chan error, len(endpoints))
		for _, ep := range endpoints {
			go func() {
				_, err := direct.Status(ctx, ep)
				errs <- err
			}()
		}
		for range endpoints {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
	}

	// The provider keeps each cluster's client between reconciles; without that, every
	// Observe would make a TLS handshake with every member (NewConnections shows the price).
	for name, kept := range map[string]*connections{"KeptConnections": newConnections(etcdclient.New), "NewConnections": nil} {
		b.Run(name, func(b *testing.B) {
			e.connections = kept
			bench.AgainstFloor(b, "observe", floor, func() {
				if _, err := e.Observe(ctx, cr); err != nil {
					b.Fatal(err)
				}
				// What the reconciler does after every reconcile.
				_ = e.Disconnect(ctx)
			})
			if kept != nil {
				kept.forget(cr.GetUID())
			}
		})
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
