//go:build integration && linux

// The integration tests run the client against real etcd processes, started here on loopback
// addresses of 127.0.3.0/24 (Linux routes the whole of 127.0.0.0/8 to lo), with TLS and client
// and peer certificate authentication as the provider runs them. They need the etcd binary in
// $ETCD_BINARIES_DIR/<version>/etcd, as cluster/tools.sh builds it:
//
//	cluster/tools.sh etcd@v3.6.16
//	ETCD_BINARIES_DIR=$PWD/.cache/etcd go test -tags integration -count=1 -v ./internal/clients/etcd/

package etcd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/stackservices/provider-stackservices/internal/etcd/pki"
)

const (
	etcdVersion = "v3.6.16"
	clientPort  = "2379"
	peerPort    = "2380"
)

// etcdBinary is the etcd under test. A missing binary fails the test rather than skipping it:
// a skipped integration test reads as a passed one.
func etcdBinary(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ETCD_BINARIES_DIR")
	if dir == "" {
		t.Fatal("ETCD_BINARIES_DIR is not set; build etcd with cluster/tools.sh etcd@" + etcdVersion)
	}
	bin := filepath.Join(dir, etcdVersion, "etcd")
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("no etcd binary at %s (%v); build it with cluster/tools.sh etcd@%s", bin, err, etcdVersion)
	}
	return bin
}

// A testCluster is the certificate authority and settings shared by the members of one cluster.
type testCluster struct {
	t     *testing.T
	bin   string
	token string
	ca    *pki.CA
	tls   *tls.Config
}

func newTestCluster(t *testing.T, token string) *testCluster {
	t.Helper()
	now := time.Now()
	ca, err := pki.NewCA(token+"-ca", time.Hour, now)
	if err != nil {
		t.Fatalf("pki.NewCA: %v", err)
	}
	client, err := ca.IssueClient("provider", time.Hour, now)
	if err != nil {
		t.Fatalf("IssueClient: %v", err)
	}
	cfg, err := ca.TLSConfig(client)
	if err != nil {
		t.Fatalf("TLSConfig: %v", err)
	}
	return &testCluster{t: t, bin: etcdBinary(t), token: token, ca: ca, tls: cfg}
}

// A proc is one etcd process.
type proc struct {
	name, ip string
	cmd      *exec.Cmd
	log      string
	exited   chan struct{}
}

func (m *proc) clientURL() string { return "https://" + net.JoinHostPort(m.ip, clientPort) }
func (m *proc) peerURL() string   { return "https://" + net.JoinHostPort(m.ip, peerPort) }

// kill stops the process and waits for it to exit.
func (m *proc) kill() {
	_ = m.cmd.Process.Kill()
	<-m.exited
}

func newProc(name, ip string) *proc { return &proc{name: name, ip: ip} }

func initialCluster(ms ...*proc) string {
	s := make([]string, 0, len(ms))
	for _, m := range ms {
		s = append(s, m.name+"="+m.peerURL())
	}
	return strings.Join(s, ",")
}

// start starts m's etcd process with the initial cluster and state ("new" or "existing").
func (tc *testCluster) start(m *proc, initial, state string) {
	t := tc.t
	t.Helper()
	for _, port := range []string{clientPort, peerPort} {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(m.ip, port), 200*time.Millisecond); err == nil {
			_ = c.Close()
			t.Fatalf("something already listens on %s:%s (a stale etcd of an earlier run?)", m.ip, port)
		}
	}
	dir := t.TempDir()
	is, err := tc.ca.IssueMember(m.name, []net.IP{net.ParseIP(m.ip)}, time.Hour, time.Now())
	if err != nil {
		t.Fatalf("IssueMember: %v", err)
	}
	files := map[string][]byte{"ca.crt": tc.ca.CertPEM, "member.crt": is.CertPEM, "member.key": is.KeyPEM}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	m.log = f("etcd.log")
	logf, err := os.Create(m.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()

	m.cmd = exec.Command(tc.bin,
		"--name="+m.name,
		"--data-dir="+f("data"),
		"--listen-client-urls="+m.clientURL(),
		"--advertise-client-urls="+m.clientURL(),
		"--listen-peer-urls="+m.peerURL(),
		"--initial-advertise-peer-urls="+m.peerURL(),
		"--initial-cluster="+initial,
		"--initial-cluster-state="+state,
		"--initial-cluster-token="+tc.token,
		"--cert-file="+f("member.crt"),
		"--key-file="+f("member.key"),
		"--trusted-ca-file="+f("ca.crt"),
		"--client-cert-auth",
		"--peer-cert-file="+f("member.crt"),
		"--peer-key-file="+f("member.key"),
		"--peer-trusted-ca-file="+f("ca.crt"),
		"--peer-client-cert-auth",
		"--log-level=warn",
	)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	// etcd reads its flags from ETCD_* variables too: ETCD_BINARIES_DIR must not reach it.
	m.cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "ETCD_") })
	// Kill the member with the test binary, should it die without running its cleanups (a
	// test timeout): a stale etcd would hold the addresses of the next run.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("cannot start etcd %s: %v", m.name, err)
	}
	m.exited = make(chan struct{})
	go func() {
		_ = m.cmd.Wait()
		close(m.exited)
	}()
	t.Cleanup(func() {
		m.kill()
		if t.Failed() {
			b, _ := os.ReadFile(m.log)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			t.Logf("last lines of the log of etcd %s:\n%s", m.name, strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	})
}

// fill writes n keys of size bytes, through a client of its own: Cluster has no use for keys.
func fill(ctx context.Context, t *testing.T, cfg *tls.Config, endpoints []string, n, size int) {
	t.Helper()
	kv, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: cfg, DialTimeout: dialTimeout, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("clientv3.New: %v", err)
	}
	defer kv.Close()
	start := time.Now()
	value := strings.Repeat("x", size)
	const batch = 100 // below etcd's --max-txn-ops (128)
	for i := 0; i < n; i += batch {
		ops := make([]clientv3.Op, 0, batch)
		for j := i; j < min(n, i+batch); j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/fill/%06d", j), value))
		}
		if _, err := kv.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatalf("cannot write keys: %v", err)
		}
	}
	t.Logf("wrote %d keys of %d bytes in %s", n, size, time.Since(start))
}

// eventually calls f until it returns nil, and fails the test if it does not within timeout.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := f()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not done after %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// retry calls f until it returns an error that is not retryable, and reports the refusals it
// got on the way.
func retry(t *testing.T, timeout time.Duration, f func() error) (time.Duration, []string, error) {
	t.Helper()
	start := time.Now()
	var refusals []string
	for {
		err := f()
		if err == nil || !IsRetryable(err) || time.Since(start) > timeout {
			return time.Since(start), refusals, err
		}
		refusals = append(refusals, err.Error())
		time.Sleep(100 * time.Millisecond)
	}
}

// summary counts repeated refusals.
func summary(refusals []string) string {
	counts := map[string]int{}
	var order []string
	for _, r := range refusals {
		if counts[r] == 0 {
			order = append(order, r)
		}
		counts[r]++
	}
	s := make([]string, 0, len(order))
	for _, r := range order {
		s = append(s, fmt.Sprintf("%dx %q", counts[r], r))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// agreedLeader asks every endpoint for its status and returns the leader they all name, or an
// error while they do not agree on one.
func agreedLeader(ctx context.Context, c Cluster, endpoints ...string) (uint64, map[string]MemberStatus, error) {
	sts := map[string]MemberStatus{}
	var leader uint64
	for _, ep := range endpoints {
		st, err := c.Status(ctx, ep)
		if err != nil {
			return 0, nil, err
		}
		if st.Leader == 0 {
			return 0, nil, fmt.Errorf("%s has no leader", ep)
		}
		if leader != 0 && st.Leader != leader {
			return 0, nil, fmt.Errorf("%s takes %x for the leader, another member %x", ep, st.Leader, leader)
		}
		leader = st.Leader
		sts[ep] = st
	}
	return leader, sts, nil
}

// cmpMembers leaves out the IDs etcd draws, and orders members by name (learners not started
// yet, which have none, come first).
var cmpMembers = []cmp.Option{
	cmpopts.IgnoreFields(Member{}, "ID"),
	cmpopts.SortSlices(func(a, b Member) bool { return a.Name < b.Name }),
	cmpopts.EquateEmpty(),
}

func voter(m *proc) Member {
	return Member{Name: m.name, PeerURLs: []string{m.peerURL()}, ClientURLs: []string{m.clientURL()}}
}

func byPeerURL(ms []Member, u string) (Member, bool) {
	i := slices.IndexFunc(ms, func(m Member) bool { return slices.Contains(m.PeerURLs, u) })
	if i < 0 {
		return Member{}, false
	}
	return ms[i], true
}

func TestMembership(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tc := newTestCluster(t, "it-membership")
	m1, m2, m3, m4 := newProc("m1", "127.0.3.1"), newProc("m2", "127.0.3.2"), newProc("m3", "127.0.3.3"), newProc("m4", "127.0.3.4")
	boot := time.Now()
	for _, m := range []*proc{m1, m2, m3} {
		tc.start(m, initialCluster(m1, m2, m3), "new")
	}
	eps := []string{m1.clientURL(), m2.clientURL(), m3.clientURL()}
	c, err := New(ctx, eps, tc.tls)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer c.Close()

	// Members: the static cluster.
	var clusterID uint64
	var ms []Member
	d := eventually(t, 30*time.Second, "Members", func() (err error) {
		if clusterID, ms, err = c.Members(ctx); err != nil {
			return err
		}
		// A member publishes its client URLs through raft a moment after it started.
		for _, m := range ms {
			if len(m.ClientURLs) == 0 {
				return fmt.Errorf("member %s has not published its client URLs yet", m.Name)
			}
		}
		return nil
	})
	t.Logf("Members answered %s after the processes started (%s of retries)", time.Since(boot), d)
	if clusterID == 0 {
		t.Error("Members: cluster ID is 0")
	}
	if diff := cmp.Diff([]Member{voter(m1), voter(m2), voter(m3)}, ms, cmpMembers...); diff != "" {
		t.Errorf("Members: -want, +got:\n%s", diff)
	}
	ids := map[uint64]bool{}
	for _, m := range ms {
		ids[m.ID] = true
	}
	if ids[0] || len(ids) != 3 {
		t.Errorf("Members: IDs are not 3 distinct non-zero IDs: %v", ms)
	}

	// Status: one leader, agreed by all.
	var leader uint64
	var sts map[string]MemberStatus
	eventually(t, 30*time.Second, "one leader agreed by all", func() (err error) {
		leader, sts, err = agreedLeader(ctx, c, eps...)
		return err
	})
	t.Logf("leader %x agreed by all %s after the processes started", leader, time.Since(boot))
	leaders := 0
	for ep, st := range sts {
		if st.ID == st.Leader {
			leaders++
		}
		if diff := cmp.Diff(MemberStatus{ID: st.ID, ClusterID: clusterID, Version: "3.6.16", Leader: leader}, st,
			cmpopts.IgnoreFields(MemberStatus{}, "RaftTerm", "RaftIndex", "RaftAppliedIndex", "DBSize"), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Status(%s): -want, +got:\n%s", ep, diff)
		}
		if !ids[st.ID] || st.DBSize == 0 || st.RaftTerm == 0 {
			t.Errorf("Status(%s): unknown ID, empty database or no term: %+v", ep, st)
		}
	}
	if leaders != 1 {
		t.Errorf("Status: %d members say they are the leader, want 1", leaders)
	}

	// Some data, so that the learner has something to catch up with: 4000 keys of 1 KiB.
	fill(ctx, t, tc.tls, eps, 4000, 1024)
	if st, err := c.Status(ctx, m1.clientURL()); err == nil {
		t.Logf("database of %s: %d bytes, raft index %d", m1.name, st.DBSize, st.RaftIndex)
	}

	// AddLearner: etcd refuses membership changes until the members have been connected for
	// 5s (ErrUnhealthy), hence the retries.
	var added Member
	d, refusals, err := retry(t, 30*time.Second, func() (err error) {
		added, ms, err = c.AddLearner(ctx, m4.peerURL())
		return err
	})
	if err != nil {
		t.Fatalf("AddLearner: %v", err)
	}
	t.Logf("AddLearner succeeded after %s and refusals %s", d, summary(refusals))
	if diff := cmp.Diff(Member{ID: added.ID, PeerURLs: []string{m4.peerURL()}, IsLearner: true}, added, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("AddLearner: added: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]Member{added, voter(m1), voter(m2), voter(m3)}, ms, cmpMembers...); diff != "" {
		t.Errorf("AddLearner: members: -want, +got:\n%s", diff)
	}

	// AddLearner again, before the learner started: the same member. A member that has not
	// applied the first change yet may not know it, hence the retries.
	var again Member
	d, refusals, err = retry(t, 30*time.Second, func() (err error) {
		again, ms, err = c.AddLearner(ctx, m4.peerURL())
		return err
	})
	if err != nil {
		t.Fatalf("AddLearner again: %v", err)
	}
	t.Logf("AddLearner again succeeded after %s and refusals %s", d, summary(refusals))
	if diff := cmp.Diff(added, again); diff != "" {
		t.Errorf("AddLearner again: -want, +got:\n%s", diff)
	}
	if len(ms) != 4 {
		t.Errorf("AddLearner again: %d members, want 4", len(ms))
	}

	// Promote the learner once it caught up.
	joined := time.Now()
	tc.start(m4, initialCluster(m1, m2, m3, m4), "existing")
	learnerUp := make(chan time.Duration, 1)
	go func() {
		for ctx.Err() == nil {
			if st, err := c.Status(ctx, m4.clientURL()); err == nil && st.IsLearner {
				learnerUp <- time.Since(joined)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	d, refusals, err = retry(t, 60*time.Second, func() error { return c.Promote(ctx, added.ID) })
	if err != nil {
		t.Fatalf("Promote: %v (after refusals %s)", err, summary(refusals))
	}
	select {
	case up := <-learnerUp:
		t.Logf("the learner answered Status as a learner %s after its process started", up)
	default:
		t.Log("the learner was promoted before it was seen answering Status as a learner")
	}
	t.Logf("Promote succeeded %s after the learner's process started, after %d refusals %s", d, len(refusals), summary(refusals))

	eventually(t, 10*time.Second, "the promoted member answers Status", func() error {
		st, err := c.Status(ctx, m4.clientURL())
		if err == nil {
			t.Logf("the promoted member: learner %t, raft index %d, applied %d, database %d bytes",
				st.IsLearner, st.RaftIndex, st.RaftAppliedIndex, st.DBSize)
		}
		return err
	})

	_, ms, err = c.Members(ctx)
	if err != nil {
		t.Fatalf("Members: %v", err)
	}
	if diff := cmp.Diff([]Member{voter(m1), voter(m2), voter(m3), voter(m4)}, ms, cmpMembers...); diff != "" {
		t.Errorf("Members after Promote: -want, +got:\n%s", diff)
	}
	if err := c.Promote(ctx, added.ID); err == nil || IsRetryable(err) {
		t.Errorf("Promote of a voter: want an error that is not retryable, got %v", err)
	}

	// AddLearner again, after the promotion: still the same member, now a voter.
	again, ms, err = c.AddLearner(ctx, m4.peerURL())
	if err != nil {
		t.Fatalf("AddLearner after Promote: %v", err)
	}
	if diff := cmp.Diff(voter(m4), again, cmpopts.IgnoreFields(Member{}, "ID")); diff != "" || again.ID != added.ID {
		t.Errorf("AddLearner after Promote: -want, +got:\n%s\nID %x, want %x", diff, again.ID, added.ID)
	}
	if len(ms) != 4 {
		t.Errorf("AddLearner after Promote: %d members, want 4", len(ms))
	}

	// MoveLeader to a follower: the new member if it is not the leader already.
	all := []*proc{m1, m2, m3, m4}
	allEps := []string{m1.clientURL(), m2.clientURL(), m3.clientURL(), m4.clientURL()}
	eventually(t, 30*time.Second, "one leader agreed by all four", func() (err error) {
		leader, sts, err = agreedLeader(ctx, c, allEps...)
		return err
	})
	idOf := map[string]uint64{}
	for _, m := range all {
		idOf[m.name] = sts[m.clientURL()].ID
	}
	var leaderM, to, other *proc
	for _, m := range []*proc{m4, m1, m2, m3} {
		switch {
		case idOf[m.name] == leader:
			leaderM = m
		case to == nil:
			to = m
		case other == nil:
			other = m
		}
	}
	if err := c.MoveLeader(ctx, other.clientURL(), idOf[to.name]); err == nil {
		t.Error("MoveLeader sent to a follower: want an error")
	} else {
		t.Logf("MoveLeader sent to a follower: %v (retryable: %t)", err, IsRetryable(err))
	}
	if err := c.MoveLeader(ctx, leaderM.clientURL(), 42); err == nil || IsRetryable(err) {
		t.Errorf("MoveLeader to no member: want an error that is not retryable, got %v", err)
	}
	start := time.Now()
	d, refusals, err = retry(t, 30*time.Second, func() error { return c.MoveLeader(ctx, leaderM.clientURL(), idOf[to.name]) })
	if err != nil {
		t.Fatalf("MoveLeader from %s to %s: %v", leaderM.name, to.name, err)
	}
	t.Logf("MoveLeader from %s to %s returned after %s, refusals %s", leaderM.name, to.name, d, summary(refusals))
	eventually(t, 15*time.Second, "all members take "+to.name+" for the leader", func() error {
		l, _, err := agreedLeader(ctx, c, allEps...)
		if err == nil && l != idOf[to.name] {
			err = fmt.Errorf("the leader is %x, want %x", l, idOf[to.name])
		}
		return err
	})
	t.Logf("all members reported %s as the leader %s after MoveLeader was called", to.name, time.Since(start))

	// Remove a follower.
	gone := other
	d, refusals, err = retry(t, 30*time.Second, func() error { return c.Remove(ctx, idOf[gone.name]) })
	if err != nil {
		t.Fatalf("Remove(%s): %v", gone.name, err)
	}
	t.Logf("Remove(%s) succeeded after %s, refusals %s", gone.name, d, summary(refusals))
	var want []Member
	for _, m := range all {
		if m != gone {
			want = append(want, voter(m))
		}
	}
	eventually(t, 10*time.Second, "membership without "+gone.name, func() error {
		_, ms, err = c.Members(ctx)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(want, ms, cmpMembers...); diff != "" {
			return fmt.Errorf("-want, +got:\n%s", diff)
		}
		return nil
	})
	select {
	case <-gone.exited:
		t.Logf("the removed member %s exited by itself", gone.name)
	case <-time.After(10 * time.Second):
		t.Logf("the removed member %s did not exit by itself within 10s", gone.name)
	}

	// Remove again: already gone, no error. The client may still pick its connection to the
	// member that exited, an error the controller retries like any other transport error.
	var removeAgain error
	eventually(t, 10*time.Second, "Remove again", func() error {
		if removeAgain = c.Remove(ctx, idOf[gone.name]); removeAgain != nil && IsRetryable(removeAgain) {
			return removeAgain
		}
		return nil
	})
	if removeAgain != nil {
		t.Errorf("Remove(%s) again: %v", gone.name, removeAgain)
	}

	// Snapshot of the leader's database.
	cl, ok := c.(*Client)
	if !ok {
		t.Fatalf("New returned a %T, want a *Client", c)
	}
	start = time.Now()
	snap, err := cl.Snapshot(ctx, to.clientURL())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	data, err := io.ReadAll(snap.Data)
	if err != nil {
		t.Fatalf("Snapshot: reading the stream: %v", err)
	}
	if err := snap.Data.Close(); err != nil {
		t.Errorf("Snapshot: closing the stream: %v", err)
	}
	// etcd appends the database's SHA-256; the database is whole pages.
	if n := len(data); n < sha256.Size || n%512 != sha256.Size {
		t.Fatalf("Snapshot: %d bytes, want pages plus a %d-byte checksum", n, sha256.Size)
	}
	if sum := sha256.Sum256(data[:len(data)-sha256.Size]); !bytes.Equal(sum[:], data[len(data)-sha256.Size:]) {
		t.Errorf("Snapshot: the trailing checksum does not match the database")
	}
	// The storage version comes with snapshots from etcd 3.6 on; 3.5 sends none.
	if snap.MemberID != idOf[to.name] || snap.Revision <= 0 {
		t.Errorf("Snapshot: member %x revision %d; want member %x and a revision", snap.MemberID, snap.Revision, idOf[to.name])
	}
	t.Logf("Snapshot of %s: %d bytes at revision %d (storage %s) in %s", to.name, len(data), snap.Revision, snap.Version, time.Since(start))
}

// TestQuorumLost checks that the membership of a cluster that lost quorum can still be read,
// so that the controller can say what happened instead of failing to observe anything.
func TestQuorumLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc := newTestCluster(t, "it-quorum-lost")
	m1, m2, m3 := newProc("q1", "127.0.3.11"), newProc("q2", "127.0.3.12"), newProc("q3", "127.0.3.13")
	for _, m := range []*proc{m1, m2, m3} {
		tc.start(m, initialCluster(m1, m2, m3), "new")
	}
	eps := []string{m1.clientURL(), m2.clientURL(), m3.clientURL()}
	c, err := New(ctx, eps, tc.tls)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer c.Close()

	eventually(t, 30*time.Second, "one leader agreed by all", func() error {
		_, _, err := agreedLeader(ctx, c, eps...)
		return err
	})
	clusterID, _, err := c.Members(ctx)
	if err != nil {
		t.Fatalf("Members: %v", err)
	}

	m2.kill()
	m3.kill()
	killed := time.Now()

	start := time.Now()
	gotID, ms, err := c.Members(ctx)
	if err != nil {
		t.Fatalf("Members without quorum: %v", err)
	}
	t.Logf("Members without quorum answered in %s", time.Since(start))
	if gotID != clusterID {
		t.Errorf("Members without quorum: cluster ID %x, want %x", gotID, clusterID)
	}
	if diff := cmp.Diff([]Member{voter(m1), voter(m2), voter(m3)}, ms, cmpMembers...); diff != "" {
		t.Errorf("Members without quorum: -want, +got:\n%s", diff)
	}

	// The survivor soon has no leader, and says so: that is how the controller tells a lost
	// quorum from a slow cluster.
	var st MemberStatus
	eventually(t, 15*time.Second, "the survivor reports no leader", func() (err error) {
		st, err = c.Status(ctx, m1.clientURL())
		if err == nil && st.Leader != 0 {
			err = fmt.Errorf("the survivor takes %x for the leader", st.Leader)
		}
		return err
	})
	t.Logf("the survivor reported no leader %s after the others were killed, errors %q", time.Since(killed), st.Errors)
	if !slices.Contains(st.Errors, "etcdserver: no leader") {
		t.Errorf("Status of the survivor: errors %q, want etcdserver: no leader", st.Errors)
	}

	// Status of a dead member fails within the status timeout.
	start = time.Now()
	if _, err := c.Status(ctx, m2.clientURL()); err == nil {
		t.Error("Status of a dead member: want an error")
	} else {
		t.Logf("Status of a dead member failed after %s: %v (retryable: %t)", time.Since(start), err, IsRetryable(err))
	}

	// What a membership change gets without quorum.
	start = time.Now()
	dead, _ := byPeerURL(ms, m3.peerURL())
	err = c.Remove(ctx, dead.ID)
	t.Logf("Remove of a dead member without quorum failed after %s: %v (retryable: %t)", time.Since(start), err, IsRetryable(err))
	if err == nil {
		t.Error("Remove without quorum: want an error")
	}
}
