//go:build integration

package local

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

// integrationRange (127.0.6.x) keeps these members away from DefaultAddressRange (make dev),
// 127.0.3.x (internal/clients/etcd tests) and 127.0.4.x (test/integration), which run at the
// same time under `go test ./...` in other processes with other Dirs: only machines in the
// same Dir know of each other before they listen.
var integrationRange = testRange(6, 1, 254)

// TestRealEtcdCluster runs a 3-member cluster of each etcd version in ETCD_TEST_VERSIONS
// (default 3.5.35 and 3.6.16, the versions the provider supports) from ETCD_BINARIES_DIR.
func TestRealEtcdCluster(t *testing.T) {
	binaries := os.Getenv("ETCD_BINARIES_DIR")
	if binaries == "" {
		t.Fatal("ETCD_BINARIES_DIR is not set: build etcd with `cluster/tools.sh etcd@v3.5.35 etcd@v3.6.16` and set it to the parent of their directories, .cache/etcd")
	}
	versions := []string{"3.5.35", "3.6.16"}
	if v := os.Getenv("ETCD_TEST_VERSIONS"); v != "" {
		versions = strings.Split(v, ",")
	}
	probe, err := New(Options{Dir: t.TempDir(), BinariesDir: binaries})
	if err != nil {
		t.Fatal(err)
	}
	have, err := probe.Versions()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		if !slices.Contains(have, v) {
			t.Fatalf("ETCD_BINARIES_DIR=%s has no etcd %s (it has %v): build it with `cluster/tools.sh etcd@v%s`", binaries, v, have, v)
		}
	}
	for _, v := range versions {
		t.Run(v, func(t *testing.T) { testCluster(t, binaries, v) })
	}
}

func testCluster(t *testing.T, binaries, version string) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := New(Options{Dir: dir, BinariesDir: binaries, AddressRange: integrationRange})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Purge(context.Background()); err != nil {
			t.Errorf("Purge: %v", err)
		}
	})
	ca := newTestCA(t)
	cluster := fmt.Sprintf("it-%d", time.Now().UnixNano())

	ms := make([]machines.Machine, 3)
	peers := make([]string, len(ms))
	for i := range ms {
		if ms[i], err = b.Allocate(ctx, cluster, fmt.Sprintf("m%d", i)); err != nil {
			t.Fatal(err)
		}
		peers[i] = ms[i].Name + "=" + ms[i].PeerURL
	}
	cfgs := make([]machines.MemberConfig, len(ms))
	start := time.Now()
	for i, m := range ms {
		cfgs[i] = ca.memberConfig(t, m, version, strings.Join(peers, ","), cluster)
		if _, err := b.Start(ctx, cluster, m.Name, cfgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	startReturned := time.Since(start)

	c := ca.client(t, ms...)
	eventually(t, time.Minute, "the cluster accepts a write", func() error { return put(ctx, c, "greeting", "hello") })
	t.Logf("etcd %s: 3 members started in %s, first write answered %s after the first Start",
		version, startReturned.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if got := get(ctx, t, c, "greeting"); got != "hello" {
		t.Errorf("get greeting = %q, want hello", got)
	}
	checkMembers(ctx, t, c, ms)

	// kill -9 a member: List sees it Stopped, Start brings it back on its data.
	victim := ms[1]
	pid, err := b.PID(cluster, victim.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, victim.Name+" is Stopped", func() error { return wantState(ctx, b, cluster, victim.Name, machines.Stopped) })
	// A write the victim missed, to see it catch up. The first attempts may fail: the client
	// may still be connected to the victim, or the victim may have been the leader.
	eventually(t, 30*time.Second, "a write while "+victim.Name+" is down", func() error { return put(ctx, c, "while-down", "written") })
	restart := time.Now()
	if _, err := b.Start(ctx, cluster, victim.Name, cfgs[1]); err != nil {
		t.Fatal(err)
	}
	if err := wantState(ctx, b, cluster, victim.Name, machines.Running); err != nil {
		t.Error(err)
	}
	alone := ca.client(t, victim)
	eventually(t, time.Minute, victim.Name+" is healthy again", func() error {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		r, err := alone.Get(rctx, "while-down")
		if err == nil && (len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "written") {
			err = fmt.Errorf("while-down = %v, want written", r.Kvs)
		}
		return err
	})
	t.Logf("etcd %s: restarted %s answered a linearizable read after %s", version, victim.Name, time.Since(restart).Round(time.Millisecond))
	checkMembers(ctx, t, c, ms)

	pids := map[string]int{}
	for _, m := range ms {
		if pids[m.Name], err = b.PID(cluster, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		del := time.Now()
		if err := b.Delete(ctx, cluster, m.Name); err != nil {
			t.Fatal(err)
		}
		t.Logf("etcd %s: deleted %s in %s", version, m.Name, time.Since(del).Round(time.Millisecond))
	}
	for name, pid := range pids {
		if procRuns(pid) {
			t.Errorf("%s (pid %d) still runs after Delete", name, pid)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, cluster)); !os.IsNotExist(err) {
		t.Errorf("the cluster's directory is still there after Delete: %v", err)
	}
	if left, err := b.List(ctx, cluster); err != nil || len(left) != 0 {
		t.Errorf("List after Delete: %v, %v; want nothing", left, err)
	}
}

func checkMembers(ctx context.Context, t *testing.T, c *clientv3.Client, ms []machines.Machine) {
	t.Helper()
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := c.MemberList(lctx)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, m := range r.Members {
		got = append(got, fmt.Sprintf("%s %v %v learner=%t", m.Name, m.PeerURLs, m.ClientURLs, m.IsLearner))
	}
	for _, m := range ms {
		want = append(want, fmt.Sprintf("%s [%s] [%s] learner=false", m.Name, m.PeerURL, m.ClientURL))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("MemberList:\n got %q\nwant %q", got, want)
	}
}

func wantState(ctx context.Context, b *Backend, cluster, name string, want machines.State) error {
	ms, err := b.List(ctx, cluster)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Name == name && m.State != want {
			return fmt.Errorf("%s is %s, want %s", name, m.State, want)
		}
	}
	return nil
}

func put(ctx context.Context, c *clientv3.Client, k, v string) error {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := c.Put(pctx, k, v)
	return err
}

func get(ctx context.Context, t *testing.T, c *clientv3.Client, k string) string {
	t.Helper()
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := c.Get(gctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 1 {
		return ""
	}
	return string(r.Kvs[0].Value)
}

func eventually(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// testCA is a throwaway CA; its certificates last an hour.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "local machines test CA"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for both server and client use, which is what etcd members need:
// the same certificate serves the peer port and dials the other members.
func (ca *testCA) issue(t *testing.T, cn string, ips []net.IP) (certPEM, keyPEM []byte, notAfter time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), tmpl.NotAfter
}

// memberConfig gives the member a certificate for its own address and for 127.0.0.1: Linux
// dials other loopback addresses from 127.0.0.1, and etcd checks a peer's client certificate
// against the address the connection comes from (without 127.0.0.1 the members never form a
// cluster). Every optional flag is set, to see each etcd version accept it.
func (ca *testCA) memberConfig(t *testing.T, m machines.Machine, version, initial, token string) machines.MemberConfig {
	t.Helper()
	cert, key, notAfter := ca.issue(t, m.Name, []net.IP{net.ParseIP(m.Address), net.IPv4(127, 0, 0, 1)})
	return machines.MemberConfig{
		Version: version, InitialCluster: initial, InitialClusterState: "new", InitialClusterToken: token,
		CA: ca.certPEM, Cert: cert, Key: key, CertNotAfter: notAfter,
		QuotaBackendBytes: 256 << 20, AutoCompactionMode: "periodic", AutoCompactionRetention: "5m", SnapshotCount: 5000,
	}
}

func (ca *testCA) client(t *testing.T, ms ...machines.Machine) *clientv3.Client {
	t.Helper()
	certPEM, keyPEM, _ := ca.issue(t, "root", nil)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	var endpoints []string
	for _, m := range ms {
		endpoints = append(endpoints, m.ClientURL)
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		TLS:         &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
