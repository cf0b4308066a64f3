package etcdcluster

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
)

// dialled is a cluster client that only knows what it was made for and whether it was closed.
type dialled struct {
	etcdclient.Cluster
	endpoints []string
	closed    bool
}

func (d *dialled) Close() error { d.closed = true; return nil }

// TestConnections: a cluster's client is kept between reconciles while its members and
// certificates stay the same, and replaced (the old one closed) when either changes, when it
// idled too long or when the cluster is forgotten.
func TestConnections(t *testing.T) {
	var made []*dialled
	failDial := false
	p := newConnections(func(_ context.Context, endpoints []string, _ *tls.Config) (etcdclient.Cluster, error) {
		if failDial {
			return nil, errors.New("no member answers")
		}
		d := &dialled{endpoints: endpoints}
		made = append(made, d)
		return d, nil
	})
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return now }
	tlsCalls := 0
	tlsConfig := func() (*tls.Config, error) { tlsCalls++; return &tls.Config{}, nil }
	three := []string{"https://a:2379", "https://b:2379", "https://c:2379"}

	get := func(uid string, endpoints []string, credentials string) *dialled {
		t.Helper()
		c, err := p.get(context.Background(), types.UID(uid), endpoints, credentials, tlsConfig)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		return c.(*dialled)
	}

	first := get("orders", three, "certs-1")
	if again := get("orders", three, "certs-1"); again != first {
		t.Error("the same members and certificates: want the kept client")
	}
	if tlsCalls != 1 {
		t.Errorf("TLS configurations built: %d, want 1 (a kept client needs none)", tlsCalls)
	}
	other := get("billing", three, "certs-1")
	if other == first {
		t.Error("another cluster got the first cluster's client")
	}

	fewer := get("orders", three[:2], "certs-1")
	if fewer == first || !first.closed {
		t.Errorf("members changed: new client %t, old one closed %t; want both", fewer != first, first.closed)
	}
	renewed := get("orders", three[:2], "certs-2")
	if renewed == fewer || !fewer.closed {
		t.Errorf("certificates renewed: new client %t, old one closed %t; want both", renewed != fewer, fewer.closed)
	}

	// billing idles past connectionIdle while orders is reconciled: billing's client goes.
	now = now.Add(connectionIdle / 2)
	get("orders", three[:2], "certs-2")
	now = now.Add(connectionIdle/2 + time.Second)
	get("orders", three[:2], "certs-2")
	if !other.closed {
		t.Error("an idle cluster's client was kept")
	}
	if renewed.closed {
		t.Error("a cluster reconciled within connectionIdle lost its client")
	}

	p.forget(types.UID("orders"))
	if !renewed.closed {
		t.Error("forget did not close the client")
	}

	// A failed dial is not kept: the next reconcile dials again.
	failDial = true
	if _, err := p.get(context.Background(), types.UID("orders"), three, "certs-2", tlsConfig); err == nil {
		t.Fatal("get: want the dial's error")
	}
	failDial = false
	if d := get("orders", three, "certs-2"); d.closed {
		t.Error("a closed client was handed out")
	}

	var endpoints [][]string
	for _, d := range made {
		endpoints = append(endpoints, d.endpoints)
	}
	want := [][]string{three, three, three[:2], three[:2], three}
	if diff := cmp.Diff(want, endpoints); diff != "" {
		t.Errorf("clients made for: -want, +got:\n%s", diff)
	}
}
