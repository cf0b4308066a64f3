//go:build integration

package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/common"
	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/etcd/pki"
	"github.com/stackservices/provider-stackservices/internal/machines"
	"github.com/stackservices/provider-stackservices/test/harness"
)

const (
	etcdOld = "3.5.35"
	etcdNew = "3.6.16"
	// etcdWait bounds every wait for a cluster change: a scale step or an upgrade step takes
	// seconds; a whole rolling upgrade of three members well under a minute.
	etcdWait = 3 * time.Minute
)

func newEtcdCluster(ns, name, version string, members int32) *v1alpha1.EtcdCluster {
	return &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.EtcdClusterSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{
				WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: name + "-etcd"},
			},
			ForProvider: v1alpha1.EtcdClusterParameters{
				Version:               version,
				Members:               members,
				Machines:              &v1alpha1.Machines{Type: v1alpha1.MachinesLocal},
				ReplaceUnhealthyAfter: ptr.To(common.Duration("5s")),
			},
		},
	}
}

// clusterIs checks that the cluster has n healthy voting members, all running version, and
// no learner.
func clusterIs(n int, version string) func(*v1alpha1.EtcdCluster) error {
	return func(cr *v1alpha1.EtcdCluster) error {
		at := cr.Status.AtProvider
		voters := 0
		for _, m := range at.Members {
			switch {
			case m.Learner:
				return fmt.Errorf("learner %s still there", m.Name)
			case !m.Healthy:
				return fmt.Errorf("member %s is unhealthy", m.Name)
			case m.Version != version:
				return fmt.Errorf("member %s runs %s, want %s", m.Name, m.Version, version)
			}
			voters++
		}
		if voters != n || len(at.Endpoints) != n {
			return fmt.Errorf("%d voters and %d endpoints, want %d (phase %s, next step %q)", voters, len(at.Endpoints), n, at.Phase, at.NextStep)
		}
		if at.Phase != v1alpha1.PhaseRunning || at.Leader == "" {
			return fmt.Errorf("phase %s, leader %q", at.Phase, at.Leader)
		}
		return nil
	}
}

func waitCluster(t *testing.T, cr *v1alpha1.EtcdCluster, check func(*v1alpha1.EtcdCluster) error) time.Duration {
	t.Helper()
	return waitClusterFor(t, etcdWaitFor(cr), cr, check)
}

// etcdWaitFor is how long a change of the cluster may take: members on Nova servers each
// wait for a server to build and boot (20-60 s on this test bed under load), processes do not.
func etcdWaitFor(cr *v1alpha1.EtcdCluster) time.Duration {
	if cr.Spec.ForProvider.Machines.Type == v1alpha1.MachinesOpenStack {
		return 3 * etcdWait
	}
	return etcdWait
}

func waitClusterFor(t *testing.T, wait time.Duration, cr *v1alpha1.EtcdCluster, check func(*v1alpha1.EtcdCluster) error) time.Duration {
	t.Helper()
	start := time.Now()
	key := client.ObjectKeyFromObject(cr)
	harness.Eventually(t, wait, "EtcdCluster "+key.String()+" as asked", func() error {
		if err := env.Kube.Get(harness.Ctx(t), key, cr); err != nil {
			return err
		}
		if err := harness.ConditionIs(cr, xpv2.TypeReady, "True"); err != nil {
			return err
		}
		return check(cr)
	})
	return time.Since(start)
}

// etcdClient connects to the cluster with nothing but the connection Secret, the way an app
// would. autoSync follows membership changes (as long-lived etcd clients do).
func etcdClient(t *testing.T, ns, secret string, autoSync bool) *clientv3.Client {
	t.Helper()
	cfg := etcdConfig(t, ns, secret)
	if autoSync {
		cfg.AutoSyncInterval = time.Second
	}
	return connect(t, cfg)
}

func connect(t *testing.T, cfg clientv3.Config) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("cannot connect with the connection Secret: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// etcdConfig is a client configuration made of nothing but the connection Secret.
func etcdConfig(t *testing.T, ns, secret string) clientv3.Config {
	t.Helper()
	return etcdConfigIn(t, env.Kube, ns, secret)
}

// etcdConfigIn is etcdConfig on the control plane kube reaches.
func etcdConfigIn(t *testing.T, kube client.Reader, ns, secret string) clientv3.Config {
	t.Helper()
	s := &corev1.Secret{}
	harness.Eventually(t, 30*time.Second, "connection Secret "+secret, func() error {
		return kube.Get(harness.Ctx(t), client.ObjectKey{Namespace: ns, Name: secret}, s)
	})
	for _, k := range []string{v1alpha1.ConnectionEndpoints, v1alpha1.ConnectionCACert, v1alpha1.ConnectionTLSCert, v1alpha1.ConnectionTLSKey} {
		if len(s.Data[k]) == 0 {
			t.Fatalf("connection Secret %s has no %s", secret, k)
		}
	}
	cert, err := tls.X509KeyPair(s.Data[v1alpha1.ConnectionTLSCert], s.Data[v1alpha1.ConnectionTLSKey])
	if err != nil {
		t.Fatalf("tls.crt/tls.key of the connection Secret: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data[v1alpha1.ConnectionCACert]) {
		t.Fatal("ca.crt of the connection Secret holds no certificate")
	}
	return clientv3.Config{
		Endpoints:   strings.Split(string(s.Data[v1alpha1.ConnectionEndpoints]), ","),
		TLS:         &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	}
}

// leadFromNewest hands leadership to the member with the highest number in its name (a
// leader change etcd makes by itself as well) and returns that member once status says it
// leads.
func leadFromNewest(t *testing.T, cr *v1alpha1.EtcdCluster, secret string) v1alpha1.MemberObservation {
	t.Helper()
	ms := cr.Status.AtProvider.Members
	newest := ms[len(ms)-1]
	for _, m := range ms {
		if !m.Leader || m.Name == newest.Name {
			continue
		}
		to, err := strconv.ParseUint(newest.ID, 16, 64)
		if err != nil {
			t.Fatalf("member ID %q: %v", newest.ID, err)
		}
		cfg := etcdConfig(t, cr.GetNamespace(), secret)
		// Only the leader accepts the request.
		cfg.Endpoints = []string{m.ClientURL}
		ctx, cancel := context.WithTimeout(harness.Ctx(t), 10*time.Second)
		defer cancel()
		if _, err := connect(t, cfg).MoveLeader(ctx, to); err != nil {
			t.Fatalf("move leadership from %s to %s: %v", m.Name, newest.Name, err)
		}
	}
	waitCluster(t, cr, func(cr *v1alpha1.EtcdCluster) error {
		if cr.Status.AtProvider.Leader != newest.Name {
			return fmt.Errorf("leader is %q, want %s", cr.Status.AtProvider.Leader, newest.Name)
		}
		return nil
	})
	return newest
}

func etcdPut(t *testing.T, c *clientv3.Client, k, v string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(harness.Ctx(t), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, k, v); err != nil {
		t.Fatalf("put %s: %v", k, err)
	}
}

func etcdGet(t *testing.T, c *clientv3.Client, k string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(harness.Ctx(t), 10*time.Second)
	defer cancel()
	r, err := c.Get(ctx, k)
	if err != nil {
		t.Fatalf("get %s: %v", k, err)
	}
	if len(r.Kvs) != 1 {
		return ""
	}
	return string(r.Kvs[0].Value)
}

// etcdNamespace creates a bare namespace (no OpenStack ProviderConfig) named after prefix.
func etcdNamespace(t *testing.T, prefix string) string {
	t.Helper()
	name := uniqueName(prefix)
	if err := env.Kube.Create(harness.Ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("cannot create namespace %s: %v", name, err)
	}
	return name
}

// memberPIDs are the process IDs of the cluster's members, by member name.
func memberPIDs(t *testing.T, cr *v1alpha1.EtcdCluster) map[string]int {
	t.Helper()
	ms, err := env.Machines.List(harness.Ctx(t), string(cr.GetUID()))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range ms {
		pid, err := env.Machines.PID(string(cr.GetUID()), m.Name)
		if err != nil {
			t.Fatalf("pid of %s: %v", m.Name, err)
		}
		out[m.Name] = pid
	}
	return out
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// A zombie has exited: its parent has not reaped it yet.
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// startByHand starts n members the way a person would (the same machines and binaries, a
// static initial cluster, TLS) and waits until a write succeeds: the floor the provider's
// time to Ready is compared with.
func startByHand(t *testing.T, n int, version string) time.Duration {
	t.Helper()
	ctx := harness.Ctx(t)
	start := time.Now()
	key := fmt.Sprintf("by-hand-%d", time.Now().UnixNano())
	ca, err := pki.NewCA("by hand", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ms, _ := env.Machines.List(context.Background(), key)
		for _, m := range ms {
			_ = env.Machines.Delete(context.Background(), key, m.Name)
		}
	})
	ms := make([]machines.Machine, n)
	peers := make([]string, n)
	for i := range ms {
		if ms[i], err = env.Machines.Allocate(ctx, key, fmt.Sprintf("m%d", i)); err != nil {
			t.Fatal(err)
		}
		peers[i] = ms[i].Name + "=" + ms[i].PeerURL
	}
	var endpoints []string
	for _, m := range ms {
		cert, err := ca.IssueMember(m.Name, []net.IP{net.ParseIP(m.Address)}, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Machines.Start(ctx, key, m.Name, machines.MemberConfig{
			Version: version, InitialCluster: strings.Join(peers, ","), InitialClusterState: "new", InitialClusterToken: key,
			CA: ca.CertPEM, Cert: cert.CertPEM, Key: cert.KeyPEM, CertNotAfter: cert.NotAfter,
		}); err != nil {
			t.Fatal(err)
		}
		endpoints = append(endpoints, m.ClientURL)
	}
	clientCert, err := ca.IssueClient("root", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := ca.TLSConfig(clientCert)
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsCfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	harness.Eventually(t, time.Minute, "members started by hand answer", func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := c.Put(pctx, "ready", "yes")
		return err
	})
	return time.Since(start)
}

// TestEtcdClusterCreateUseDelete creates a 3-member cluster, uses it with nothing but the
// connection Secret, compares its time to Ready with starting the same members by hand, and
// deletes it: machines, data, processes and the CA go.
func TestEtcdClusterCreateUseDelete(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-create")
	cr := newEtcdCluster(ns, "orders", etcdNew, 3)

	byHand := startByHand(t, 3, etcdNew)

	start := time.Now()
	if err := env.Kube.Create(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	waitCluster(t, cr, clusterIs(3, etcdNew))
	toReady := time.Since(start)
	t.Logf("3 members: Ready in %s; started by hand (same machines, binaries and TLS) in %s; ratio %.1f",
		toReady.Round(time.Millisecond), byHand.Round(time.Millisecond), toReady.Seconds()/byHand.Seconds())

	if got, want := meta.GetExternalName(cr), cr.Status.AtProvider.ClusterID; got != want || got == "" {
		t.Errorf("external name %q, want the cluster ID %q", got, want)
	}
	// Bootstrap gave orders-0..2: the next member to join must be orders-3.
	if got := cr.Status.AtProvider.LastMemberIndex; got != 2 {
		t.Errorf("status.atProvider.lastMemberIndex = %d after bootstrapping 3 members, want 2", got)
	}
	c := etcdClient(t, ns, "orders-etcd", false)
	etcdPut(t, c, "greeting", "hello")
	if got := etcdGet(t, c, "greeting"); got != "hello" {
		t.Errorf("get greeting = %q, want hello", got)
	}
	// Without a client certificate the cluster refuses the connection.
	noCert := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	anon, err := clientv3.New(clientv3.Config{Endpoints: cr.Status.AtProvider.Endpoints, TLS: noCert, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err == nil {
		ctx, cancel := context.WithTimeout(harness.Ctx(t), 3*time.Second)
		_, err = anon.Put(ctx, "anonymous", "write")
		cancel()
		_ = anon.Close()
	}
	if err == nil {
		t.Error("a client without a certificate could write")
	}

	pids := memberPIDs(t, cr)
	if len(pids) != 3 {
		t.Fatalf("%d machines, want 3", len(pids))
	}
	if err := env.Kube.Delete(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("member %s (pid %d) still runs after delete", name, pid)
		}
	}
	if ms, err := env.Machines.List(harness.Ctx(t), string(cr.GetUID())); err != nil || len(ms) != 0 {
		t.Errorf("machines after delete: %v, %v", ms, err)
	}
	err = env.Kube.Get(harness.Ctx(t), client.ObjectKey{Namespace: ns, Name: "orders-etcd-ca"}, &corev1.Secret{})
	if client.IgnoreNotFound(err) != nil || err == nil {
		t.Errorf("the CA Secret is still there after delete (err %v)", err)
	}
}

// TestEtcdClusterScales goes from 3 to 5 members and back to 3, one member at a time, and
// keeps the data.
func TestEtcdClusterScales(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-scale")
	cr := runningCluster(t, newEtcdCluster(ns, "inventory", etcdNew, 3), clusterIs(3, etcdNew))
	c := etcdClient(t, ns, "inventory-etcd", true)
	etcdPut(t, c, "before-scaling", "kept")

	for _, n := range []int32{5, 3} {
		progress := watchProgress(t, cr)
		env.Mutate(t, client.ObjectKeyFromObject(cr), cr, func() { cr.Spec.ForProvider.Members = n })
		took := waitCluster(t, cr, clusterIs(int(n), etcdNew))
		seen := progress()
		t.Logf("scaled to %d members in %s; status said remaining %v, refused %q", n, took.Round(time.Millisecond), seen.remaining, seen.refused)
		if got := etcdGet(t, c, "before-scaling"); got != "kept" {
			t.Errorf("after scaling to %d: before-scaling = %q, want kept", n, got)
		}
		// Issue 11, finding 8: status shows how far a multi-step change is.
		if !slices.Contains(seen.remaining, 2) {
			t.Errorf("scaling from 3 to %d: status.atProvider.remaining went %v, want 2 at the start", n, seen.remaining)
		}
	}
	// Each add got the next name, and none was thrown away: an add etcd refused is retried
	// on the same machine, not on a new one after deleting the first.
	if got := cr.Status.AtProvider.LastMemberIndex; got != 4 {
		t.Errorf("lastMemberIndex = %d after scaling 3 to 5, want 4 (names given to throwaway machines?)", got)
	}
	// A machine that an interrupted step left without a member is deleted too (a
	// removal whose answer was lost, under load): that is recovery, not waste.
	for _, msg := range eventMessages(t, ns, cr.Name, "DeletedMachine") {
		if strings.Contains(msg, "no longer needed") {
			t.Errorf("the provider made and deleted a throwaway machine: %s", msg)
		} else {
			t.Logf("deleted a machine: %s", msg)
		}
	}

	// Paused, a change waits: someone works on the cluster by hand.
	env.Mutate(t, client.ObjectKeyFromObject(cr), cr, func() {
		cr.Spec.ForProvider.Paused = true
		cr.Spec.ForProvider.Members = 1
	})
	harness.Eventually(t, 30*time.Second, "phase Paused", func() error {
		if err := env.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		if cr.Status.AtProvider.Phase != v1alpha1.PhasePaused {
			return fmt.Errorf("phase %s", cr.Status.AtProvider.Phase)
		}
		return nil
	})
	time.Sleep(3 * poll)
	if err := env.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(cr), cr); err != nil {
		t.Fatal(err)
	}
	if err := clusterIs(3, etcdNew)(cr); err != nil && !strings.Contains(err.Error(), "phase Paused") {
		t.Errorf("paused cluster changed: %v", err)
	}
	env.Mutate(t, client.ObjectKeyFromObject(cr), cr, func() { cr.Spec.ForProvider.Paused = false })
	waitCluster(t, cr, clusterIs(1, etcdNew))

	if err := env.Kube.Delete(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
}

// TestEtcdClusterGrowsWhileNobodyWrites adds members to a cluster whose raft log was
// compacted (more than 5000 entries, a snapshot every 100) and that nobody writes to: each
// new member joins from the leader's snapshot, and etcd has it refuse everything, its own
// announcement included, until it applies an entry after that snapshot. The provider's
// nudge is that entry; without it the learners would wait forever, and be replaced by
// learners that wait forever.
func TestEtcdClusterGrowsWhileNobodyWrites(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-quiet")
	cr := runningCluster(t, withSettings(newEtcdCluster(ns, "quiet", etcdNew, 1), &v1alpha1.Settings{SnapshotCount: ptr.To[int64](100)}), clusterIs(1, etcdNew))
	c := etcdClient(t, ns, "quiet-etcd", true)
	const entries = 6000
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < entries; i += 8 {
				ctx, cancel := context.WithTimeout(harness.Ctx(t), 10*time.Second)
				_, err := c.Put(ctx, fmt.Sprintf("k%05d", i), "v")
				cancel()
				if err != nil {
					t.Errorf("put k%05d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()

	env.Mutate(t, client.ObjectKeyFromObject(cr), cr, func() { cr.Spec.ForProvider.Members = 3 })
	took := waitCluster(t, cr, clusterIs(3, etcdNew))
	t.Logf("a cluster of %d entries that nobody writes to grew from 1 to 3 members in %s", entries, took.Round(time.Millisecond))
	if got := etcdGet(t, c, "k05999"); got != "v" {
		t.Errorf("k05999 = %q after growing, want v", got)
	}
	if err := env.Kube.Delete(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
}

// TestEtcdClusterReplacesAKilledMember kills the leader's process with SIGKILL and waits for
// the provider to replace it (new learner, promoted, the dead member removed).
func TestEtcdClusterReplacesAKilledMember(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-heal")
	cr := runningCluster(t, newEtcdCluster(ns, "sessions", etcdNew, 3), clusterIs(3, etcdNew))
	c := etcdClient(t, ns, "sessions-etcd", true)
	etcdPut(t, c, "before-the-crash", "kept")

	// The victim leads, and it is the newest member: its replacement gets the number after
	// the victim's, the one a careless naming would give again.
	victim := leadFromNewest(t, cr, "sessions-etcd")
	pid := memberPIDs(t, cr)[victim.Name]
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitCluster(t, cr, func(cr *v1alpha1.EtcdCluster) error {
		for _, m := range cr.Status.AtProvider.Members {
			if m.Name == victim.Name || m.ID == victim.ID {
				// Everything the provider says, for a failure to be diagnosable from the log.
				return fmt.Errorf("the killed member %s (ID %s) is still a member, or its name was given again (phase %s, next step %q, Synced %q, members %+v)",
					victim.Name, victim.ID, cr.Status.AtProvider.Phase, cr.Status.AtProvider.NextStep, cr.GetCondition(xpv2.TypeSynced).Message, cr.Status.AtProvider.Members)
			}
		}
		return clusterIs(3, etcdNew)(cr)
	})
	t.Logf("killed leader %s replaced in %s (of which %s is the replaceUnhealthyAfter threshold)",
		victim.Name, time.Since(killed).Round(time.Millisecond), *cr.Spec.ForProvider.ReplaceUnhealthyAfter)
	if got := etcdGet(t, c, "before-the-crash"); got != "kept" {
		t.Errorf("before-the-crash = %q, want kept", got)
	}
	if err := env.Kube.Delete(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
}

// TestEtcdClusterRollingUpgrade upgrades 3.5 to 3.6 by replacing members one at a time while
// a client writes without pause, and counts the writes that failed and the acknowledged
// writes that were lost.
func TestEtcdClusterRollingUpgrade(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-upgrade")
	cr := runningCluster(t, newEtcdCluster(ns, "ledger", etcdOld, 3), clusterIs(3, etcdOld))
	c := etcdClient(t, ns, "ledger-etcd", true)

	upgradeUnderWrites(t, cr, c, etcdNew)
	if err := env.Kube.Delete(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
}

// upgradeUnderWrites upgrades the cluster to version while a client writes without pause
// (each write retried until acknowledged, as an app would), then checks that no acknowledged
// write was lost and that at most one attempt failed per member replaced.
func upgradeUnderWrites(t *testing.T, cr *v1alpha1.EtcdCluster, c *clientv3.Client, version string) {
	t.Helper()
	from, members := cr.Spec.ForProvider.Version, int64(cr.Spec.ForProvider.Members)
	var (
		stop             = make(chan struct{})
		wg               sync.WaitGroup
		attempts, failed atomic.Int64
		mu               sync.Mutex
		acked            []string
		firstErr         atomic.Value
	)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprintf("write-%06d", i)
			// Like an app would, a write that fails is tried again; every failure counts.
			for {
				attempts.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := c.Put(ctx, k, k)
				cancel()
				if err == nil {
					break
				}
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				time.Sleep(50 * time.Millisecond)
			}
			mu.Lock()
			acked = append(acked, k)
			mu.Unlock()
		}
	})

	movesBefore := countEvents(t, cr.Namespace, cr.Name, "MovedLeader")
	start := time.Now()
	env.Mutate(t, client.ObjectKeyFromObject(cr), cr, func() { cr.Spec.ForProvider.Version = version })
	waitCluster(t, cr, clusterIs(int(members), version))
	took := time.Since(start)
	close(stop)
	wg.Wait()

	lost := 0
	for _, k := range acked {
		if etcdGet(t, c, k) != k {
			lost++
		}
	}
	t.Logf("rolling upgrade %s to %s in %s: %d writes acknowledged, %d attempts failed (first: %v), %d acknowledged writes lost",
		from, version, took.Round(time.Millisecond), len(acked), failed.Load(), firstErr.Load(), lost)
	if lost != 0 {
		t.Errorf("%d acknowledged writes were lost", lost)
	}
	// A member that is removed stops, and a write in flight on it at that moment fails
	// ("server stopped", or the connection reset) and is retried on another member; so may
	// one in flight on the leader when leadership moves ("leader changed"): at most one per
	// removed member and per move for this one-at-a-time writer. Anything more would mean
	// the cluster was unavailable.
	moves := int64(countEvents(t, cr.Namespace, cr.Name, "MovedLeader") - movesBefore)
	if failed.Load() > members+moves {
		t.Errorf("%d of %d write attempts failed during the rolling upgrade, more than the %d members removed and %d leadership moves (first: %v)",
			failed.Load(), attempts.Load(), members, moves, firstErr.Load())
	}
	if len(acked) < 10 {
		t.Errorf("only %d writes during the upgrade: the writer did not really run", len(acked))
	}
}

// TestEtcdClusterAdmission: what etcd cannot do is refused by the API server, with a message
// that says why. Observe-only resources, so that nothing is started.
func TestEtcdClusterAdmission(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-admission")
	observeOnly := func(cr *v1alpha1.EtcdCluster) *v1alpha1.EtcdCluster {
		cr.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
		return cr
	}
	create := map[string]struct {
		cr   *v1alpha1.EtcdCluster
		want string
	}{
		"FourMembers":      {cr: newEtcdCluster(ns, "four", etcdNew, 4), want: "members must be 1, 3, 5 or 7"},
		"LeadingV":         {cr: newEtcdCluster(ns, "leading-v", "v3.6.16", 3), want: "without a leading v"},
		"UnknownMinor":     {cr: newEtcdCluster(ns, "unknown", "3.9.0", 3), want: "3.5, 3.6 or 3.7"},
		"RetentionNoMode":  {cr: withSettings(newEtcdCluster(ns, "retention", etcdNew, 3), &v1alpha1.Settings{AutoCompactionRetention: ptr.To("1h")}), want: "needs settings.autoCompactionMode"},
		"RenewAfterExpiry": {cr: withTLS(newEtcdCluster(ns, "renew", etcdNew, 3), "1h", "2h"), want: "renewBefore must be shorter"},
	}
	for name, tc := range create {
		t.Run(name, func(t *testing.T) {
			err := env.Kube.Create(harness.Ctx(t), observeOnly(tc.cr))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create: got %v, want an error saying %q", err, tc.want)
			}
		})
	}

	version := func(v string) func(*v1alpha1.EtcdCluster) {
		return func(cr *v1alpha1.EtcdCluster) { cr.Spec.ForProvider.Version = v }
	}
	updates := map[string]struct {
		from   string
		change func(*v1alpha1.EtcdCluster)
		want   string
	}{
		"Downgrade":       {from: etcdNew, change: version(etcdOld), want: "cannot be downgraded"},
		"PatchDowngrade":  {from: etcdNew, change: version("3.6.10"), want: "cannot be downgraded"},
		"TwoMinorJump":    {from: etcdOld, change: version("3.7.3"), want: "one minor version at a time"},
		"NextMinorIsFine": {from: etcdOld, change: version(etcdNew)},
		// Machines taken from a ProviderConfig are written into the spec; they stay there.
		"MachinesRemoved": {from: etcdNew, change: func(cr *v1alpha1.EtcdCluster) { cr.Spec.ForProvider.Machines = nil }, want: "machines cannot be removed"},
		"MachinesMoved": {from: etcdNew, change: func(cr *v1alpha1.EtcdCluster) {
			cr.Spec.ForProvider.Machines = &v1alpha1.Machines{Type: v1alpha1.MachinesOpenStack, OpenStack: &v1alpha1.OpenStackMachines{Flavor: "f", Image: "i", Subnet: ptr.To("s")}}
		}, want: "machines.type is immutable"},
	}
	for name, tc := range updates {
		t.Run(name, func(t *testing.T) {
			cr := observeOnly(newEtcdCluster(ns, strings.ToLower(name), tc.from, 3))
			if err := env.Kube.Create(harness.Ctx(t), cr); err != nil {
				t.Fatal(err)
			}
			// The provider writes the resource's status meanwhile: retry on conflicts only.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := env.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(cr), cr); err != nil {
					return err
				}
				tc.change(cr)
				return env.Kube.Update(harness.Ctx(t), cr)
			})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("update: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("update: got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func withSettings(cr *v1alpha1.EtcdCluster, s *v1alpha1.Settings) *v1alpha1.EtcdCluster {
	cr.Spec.ForProvider.Settings = s
	return cr
}

func withTLS(cr *v1alpha1.EtcdCluster, validity, renewBefore string) *v1alpha1.EtcdCluster {
	cr.Spec.ForProvider.TLS = &v1alpha1.TLS{CertificateValidity: ptr.To(common.Duration(validity)), RenewBefore: ptr.To(common.Duration(renewBefore))}
	return cr
}

// TestEtcdClusterRenewsCertificates gives members and clients certificates that are due for
// renewal 30 seconds after they are issued, and waits for every member to be replaced by one
// with a fresh certificate, and the client certificate in the Secret to be renewed.
func TestEtcdClusterRenewsCertificates(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-renew")
	cr := runningCluster(t, withTLS(newEtcdCluster(ns, "certs", etcdNew, 3), "2m", "90s"), clusterIs(3, etcdNew))
	original := map[string]bool{}
	for _, m := range cr.Status.AtProvider.Members {
		original[m.Name] = true
	}
	firstClient := cr.Status.AtProvider.ClientCertificateNotAfter.Time
	c := etcdClient(t, ns, "certs-etcd", true)
	etcdPut(t, c, "before-renewal", "kept")

	start := time.Now()
	waitCluster(t, cr, func(cr *v1alpha1.EtcdCluster) error {
		for _, m := range cr.Status.AtProvider.Members {
			if original[m.Name] {
				return fmt.Errorf("member %s still has its first certificate", m.Name)
			}
		}
		if !cr.Status.AtProvider.ClientCertificateNotAfter.After(firstClient) {
			return fmt.Errorf("the client certificate was not renewed")
		}
		return clusterIs(3, etcdNew)(cr)
	})
	t.Logf("every member replaced with a fresh certificate %s after the test saw the cluster Ready", time.Since(start).Round(time.Millisecond))
	if got := etcdGet(t, etcdClient(t, ns, "certs-etcd", false), "before-renewal"); got != "kept" {
		t.Errorf("before-renewal = %q, want kept", got)
	}
	if err := env.Kube.Delete(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
}

// TestEtcdClusterUpgradesTwoMinorsInARow goes 3.5 to 3.6 and, as soon as that finished, to 3.7:
// the fast path on which etcd 3.7 is known to crash at start unless 3.6 took a snapshot.
func TestEtcdClusterUpgradesTwoMinorsInARow(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-upgrade-twice")
	cr := runningCluster(t, newEtcdCluster(ns, "twice", etcdOld, 3), clusterIs(3, etcdOld))
	c := etcdClient(t, ns, "twice-etcd", true)
	for i := range 100 {
		etcdPut(t, c, fmt.Sprintf("k%03d", i), "v")
	}
	for _, v := range []string{etcdNew, "3.7.3"} {
		start := time.Now()
		env.Mutate(t, client.ObjectKeyFromObject(cr), cr, func() { cr.Spec.ForProvider.Version = v })
		waitCluster(t, cr, clusterIs(3, v))
		var names []string
		for _, m := range cr.Status.AtProvider.Members {
			names = append(names, m.Name)
		}
		t.Logf("upgraded to %s in %s: members %v", v, time.Since(start).Round(time.Millisecond), names)
	}
	if got := etcdGet(t, c, "k099"); got != "v" {
		t.Errorf("k099 = %q after two upgrades", got)
	}
	if err := env.Kube.Delete(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
}

// TestEtcdClusterQuorumLossIsReportedNotForced kills two of three members: the provider must
// say that quorum is lost, remove nothing and force nothing, and the cluster must come back
// with its data once the members run again.
func TestEtcdClusterQuorumLossIsReportedNotForced(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-quorum")
	cr := runningCluster(t, newEtcdCluster(ns, "fragile", etcdNew, 3), clusterIs(3, etcdNew))
	c := etcdClient(t, ns, "fragile-etcd", false)
	etcdPut(t, c, "before-the-outage", "kept")

	loseQuorum(t, cr)
	key := client.ObjectKeyFromObject(cr)
	// Well past replaceUnhealthyAfter: still nothing removed or added.
	time.Sleep(3 * 5 * time.Second) // three times replaceUnhealthyAfter
	if err := env.Kube.Get(harness.Ctx(t), key, cr); err != nil {
		t.Fatal(err)
	}
	if got := len(cr.Status.AtProvider.Members); got != 3 {
		t.Errorf("%d members while quorum is lost, want the same 3: %+v", got, cr.Status.AtProvider.Members)
	}
	t.Logf("while quorum is lost: %s", cr.GetCondition(xpv2.TypeSynced).Message)

	// The members come back (what a host does after a reboot): the cluster is whole again.
	if _, err := env.Machines.Resume(harness.Ctx(t), string(cr.GetUID())); err != nil {
		t.Fatal(err)
	}
	waitCluster(t, cr, clusterIs(3, etcdNew))
	if got := etcdGet(t, c, "before-the-outage"); got != "kept" {
		t.Errorf("before-the-outage = %q, want kept", got)
	}
	if err := env.Kube.Delete(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
}

// memberProcess is what it takes to start a member's process again.
type memberProcess struct {
	argv    []string
	dir     string
	environ []string
}

// loseQuorum kills 2 of the cluster's 3 members with SIGKILL, waits until the provider reports
// the quorum lost, and returns the processes it killed.
func loseQuorum(t *testing.T, cr *v1alpha1.EtcdCluster) []memberProcess {
	t.Helper()
	var killed []memberProcess
	for name, pid := range memberPIDs(t, cr) {
		if len(killed) == 2 {
			break
		}
		p := processOf(t, pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s: %v", name, err)
		}
		killed = append(killed, p)
	}
	key := client.ObjectKeyFromObject(cr)
	harness.Eventually(t, time.Minute, "quorum loss reported", func() error {
		if err := env.Kube.Get(harness.Ctx(t), key, cr); err != nil {
			return err
		}
		if cr.Status.AtProvider.Phase != v1alpha1.PhaseQuorumLost {
			return fmt.Errorf("phase %s", cr.Status.AtProvider.Phase)
		}
		synced := cr.GetCondition(xpv2.TypeSynced)
		if synced.Status != "False" || !strings.Contains(synced.Message, "quorum lost") {
			return fmt.Errorf("Synced %s: %q", synced.Status, synced.Message)
		}
		return nil
	})
	return killed
}

// restartByHand starts a killed member again outside the provider, as a person (or an init
// system the provider does not know of) would: the same command, directory and environment,
// a new process. It is stopped when the test ends.
func restartByHand(t *testing.T, p memberProcess) {
	t.Helper()
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir, cmd.Env = p.dir, p.environ
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot restart %s: %v", p.argv[0], err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}

// processOf reads what it takes to start the process again: its command line, directory
// and environment.
func processOf(t *testing.T, pid int) memberProcess {
	t.Helper()
	read := func(what string) []string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, what))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	dir, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return memberProcess{argv: read("cmdline"), dir: dir, environ: read("environ")}
}

// Issue 11, finding 8: after 2 of 3 members died and came back healthy (started again
// outside the provider, so with processes it did not record), the cluster stayed QuorumLost:
// the provider trusted its records over etcd. etcd's own answer must win.
func TestEtcdClusterSeesMembersThatComeBack(t *testing.T) {
	t.Parallel()
	ns := etcdNamespace(t, "etcd-back")
	cr := runningCluster(t, newEtcdCluster(ns, "phoenix", etcdNew, 3), clusterIs(3, etcdNew))
	before := map[string]string{}
	for _, m := range cr.Status.AtProvider.Members {
		before[m.Name] = m.ID
	}

	killed := loseQuorum(t, cr)
	for _, p := range killed {
		restartByHand(t, p)
	}
	waitCluster(t, cr, clusterIs(3, etcdNew))
	for _, m := range cr.Status.AtProvider.Members {
		if before[m.Name] != m.ID {
			t.Errorf("member %s (ID %s) is not one of the members before the outage %v: the provider replaced members that came back", m.Name, m.ID, before)
		}
	}
	if err := env.Kube.Delete(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
}

// progressSeen is what status.atProvider said while a change ran.
type progressSeen struct {
	remaining []int32
	refused   []string
}

// watchProgress polls the cluster's status until the returned function is called, and returns
// the distinct values of remaining and refused it saw.
func watchProgress(t *testing.T, cr *v1alpha1.EtcdCluster) func() progressSeen {
	t.Helper()
	key := client.ObjectKeyFromObject(cr)
	done := make(chan struct{})
	result := make(chan progressSeen)
	go func() {
		var seen progressSeen
		for {
			got := &v1alpha1.EtcdCluster{}
			if err := env.Kube.Get(context.Background(), key, got); err == nil {
				at := got.Status.AtProvider
				if !slices.Contains(seen.remaining, at.Remaining) {
					seen.remaining = append(seen.remaining, at.Remaining)
				}
				if at.Refused != "" && !slices.Contains(seen.refused, at.Refused) {
					seen.refused = append(seen.refused, at.Refused)
				}
			}
			select {
			case <-done:
				result <- seen
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() progressSeen {
		close(done)
		return <-result
	}
}

// runningCluster creates cr and waits until it is as check wants.
func runningCluster(t *testing.T, cr *v1alpha1.EtcdCluster, check func(*v1alpha1.EtcdCluster) error) *v1alpha1.EtcdCluster {
	t.Helper()
	if err := env.Kube.Create(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	waitCluster(t, cr, check)
	return cr
}
