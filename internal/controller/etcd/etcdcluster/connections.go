package etcdcluster

import (
	"context"
	"crypto/tls"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
)

// connectionIdle is how long a cluster's client is kept without a reconcile using it: longer
// than any poll interval, so that a steady cluster keeps its connections between polls.
const connectionIdle = 10 * time.Minute

// connections keep one client per cluster across reconciles, so that a steady-state Observe
// costs the calls it makes rather than a TLS handshake with every member. A client is reused
// only for the same members and the same certificates: a change of membership or a renewed
// certificate replaces it.
type connections struct {
	newCluster clusterFactory
	now        func() time.Time

	mu        sync.Mutex
	byCluster map[types.UID]*connection
}

type connection struct {
	// key says what the client was made for: its endpoints and certificates.
	key      string
	cluster  etcdclient.Cluster
	lastUsed time.Time
}

func newConnections(newCluster clusterFactory) *connections {
	return &connections{newCluster: newCluster, now: time.Now, byCluster: map[types.UID]*connection{}}
}

// get returns the cluster's client for the endpoints and credentials, kept from an earlier
// reconcile or made now with the TLS configuration tlsConfig returns. credentials names the
// certificates that configuration holds.
func (p *connections) get(ctx context.Context, uid types.UID, endpoints []string, credentials string, tlsConfig func() (*tls.Config, error)) (etcdclient.Cluster, error) {
	key := connectionKey(endpoints, credentials)
	p.mu.Lock()
	now := p.now()
	var stale []etcdclient.Cluster
	for id, c := range p.byCluster {
		if now.Sub(c.lastUsed) > connectionIdle || (id == uid && c.key != key) {
			stale = append(stale, c.cluster)
			delete(p.byCluster, id)
		}
	}
	c, ok := p.byCluster[uid]
	if ok {
		c.lastUsed = now
	}
	p.mu.Unlock()
	closeAll(stale)
	if ok {
		return c.cluster, nil
	}

	// Dialled outside the lock: one cluster's members that do not answer must not hold up
	// the others' reconciles. A cluster is reconciled by one worker at a time, so no other
	// client of it is being made meanwhile.
	tlsCfg, err := tlsConfig()
	if err != nil {
		return nil, err
	}
	cl, err := p.newCluster(ctx, endpoints, tlsCfg)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.byCluster[uid] = &connection{key: key, cluster: cl, lastUsed: now}
	p.mu.Unlock()
	return cl, nil
}

// forget closes the cluster's client, if there is one: the cluster is gone, or its client
// failed and the next reconcile dials anew.
func (p *connections) forget(uid types.UID) {
	p.mu.Lock()
	c, ok := p.byCluster[uid]
	delete(p.byCluster, uid)
	p.mu.Unlock()
	if ok {
		_ = c.cluster.Close()
	}
}

func closeAll(cs []etcdclient.Cluster) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// connectionKey identifies endpoints and credentials; endpoints come in the order of the
// machines, which the backends sort by name.
func connectionKey(endpoints []string, credentials string) string {
	return strings.Join(endpoints, ",") + "|" + credentials
}
