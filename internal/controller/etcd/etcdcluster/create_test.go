package etcdcluster

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/internal/etcd/backup"
	"github.com/stackservices/provider-stackservices/internal/machines"
	"github.com/stackservices/provider-stackservices/internal/transfers"
)

// simulated is a machines backend and the etcd cluster its machines form, for the
// decisions of Create and Update: machines get addresses and run what they are started with
// (Start fails for the names startErr maps, and the servers of those failed maps go ERROR
// with its fault); the membership changes as etcd's would, and the voter of the lowest ID
// leads while a quorum of the voters' machines runs. It checks snapshots and may be handed an identity, as local
// machines do, unless providerChecks says it is like servers instead. changes records the
// membership changes asked for.
type simulated struct {
	etcdclient.Cluster

	mu             sync.Mutex
	machines       []machines.Machine
	started        map[string]machines.MemberConfig
	deleted        []string
	startErr       map[string]error
	failed         map[string]string
	providerChecks bool
	members        []etcdclient.Member
	lastAddress    int
	lastLearner    uint64
	changes        []string
	// maxRunning is how many machines may run at once, as a cloud's quota allows (0: any).
	maxRunning int
	// fromSnapshot: a learner started joins from the leader's snapshot, and announces itself
	// (name and client URL) only once an entry after it was applied: a nudge, or a write.
	fromSnapshot bool
	silent       map[string]string // learners not announced yet: name by peer URL
	nudges       int
}

const simulatedClusterID = 0xc0ffee

func newSimulated() *simulated {
	return &simulated{started: map[string]machines.MemberConfig{}}
}

func (s *simulated) ChecksSnapshots() bool { return !s.providerChecks }

func (s *simulated) DecryptsSnapshots() bool { return !s.providerChecks }

// CheckCapacity refuses more machines than maxRunning.
func (s *simulated) CheckCapacity(_ context.Context, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	running := 0
	for _, m := range s.machines {
		if m.State == machines.Running {
			running++
		}
	}
	if s.maxRunning > 0 && running+n > s.maxRunning {
		return fmt.Errorf("quota: %d machines run, %d may, %d more asked", running, s.maxRunning, n)
	}
	return nil
}

func (s *simulated) Allocate(_ context.Context, cluster, name string) (machines.Machine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.machines {
		if m.Name == name {
			return m, nil
		}
	}
	s.lastAddress++
	addr := fmt.Sprintf("127.0.9.%d", s.lastAddress)
	m := machines.Machine{Cluster: cluster, Name: name, Address: addr, State: machines.Allocated,
		PeerURL: "https://" + addr + ":2380", ClientURL: "https://" + addr + ":2379"}
	s.machines = append(s.machines, m)
	return m, nil
}

func (s *simulated) Start(_ context.Context, _, name string, cfg machines.MemberConfig) (machines.Machine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.startErr[name]; err != nil {
		return machines.Machine{}, err
	}
	i := slices.IndexFunc(s.machines, func(m machines.Machine) bool { return m.Name == name })
	if i < 0 {
		return machines.Machine{}, errors.New("not allocated")
	}
	m := &s.machines[i]
	m.State, m.Version, s.started[name] = machines.Running, cfg.Version, cfg
	if fault, ok := s.failed[name]; ok {
		m.State, m.Server = machines.Stopped, &machines.Server{ID: "s-" + name, Status: "ERROR", Fault: fault}
	}
	j := slices.IndexFunc(s.members, func(mb etcdclient.Member) bool { return mb.PeerURLs[0] == m.PeerURL })
	switch {
	case j >= 0 && s.fromSnapshot:
		if s.silent == nil {
			s.silent = map[string]string{}
		}
		s.silent[m.PeerURL] = name
	case j >= 0:
		// A learner added for this machine starts, and says its name.
		s.members[j].Name, s.members[j].ClientURLs = name, []string{m.ClientURL}
	case cfg.InitialClusterState == "new":
		// IDs in the order of the machines (whatever order they start in): the first leads.
		s.members = append(s.members, etcdclient.Member{ID: uint64(i + 1), Name: name, PeerURLs: []string{m.PeerURL}, ClientURLs: []string{m.ClientURL}})
	}
	return *m, nil
}

func (s *simulated) Delete(_ context.Context, _, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleted = append(s.deleted, name)
	s.machines = slices.DeleteFunc(s.machines, func(m machines.Machine) bool { return m.Name == name })
	return nil
}

func (s *simulated) List(_ context.Context, _ string) ([]machines.Machine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.machines), nil
}

func (s *simulated) connect(context.Context, []string, *tls.Config) (etcdclient.Cluster, error) {
	return s, nil
}

func (s *simulated) Members(context.Context) (uint64, []etcdclient.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return simulatedClusterID, slices.Clone(s.members), nil
}

func (s *simulated) Status(_ context.Context, endpoint string) (etcdclient.MemberStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var leader uint64
	voters, running := 0, 0
	for _, mb := range s.members {
		if mb.IsLearner {
			continue
		}
		voters++
		if slices.ContainsFunc(s.machines, func(m machines.Machine) bool { return m.PeerURL == mb.PeerURLs[0] && m.State == machines.Running }) {
			running++
		}
		if leader == 0 || mb.ID < leader {
			leader = mb.ID
		}
	}
	if running < voters/2+1 {
		// No quorum, no leader.
		leader = 0
	}
	for _, mb := range s.members {
		if len(mb.ClientURLs) == 0 || mb.ClientURLs[0] != endpoint {
			continue
		}
		if !slices.ContainsFunc(s.machines, func(m machines.Machine) bool { return m.ClientURL == endpoint && m.State == machines.Running }) {
			break
		}
		return etcdclient.MemberStatus{ID: mb.ID, ClusterID: simulatedClusterID, Version: "3.6.16", Leader: leader, RaftTerm: 2, RaftIndex: 100, RaftAppliedIndex: 100, IsLearner: mb.IsLearner}, nil
	}
	return etcdclient.MemberStatus{}, errors.New("connection refused")
}

func (s *simulated) AddLearner(_ context.Context, peerURL string) (etcdclient.Member, []etcdclient.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastLearner++
	added := etcdclient.Member{ID: 100 + s.lastLearner, PeerURLs: []string{peerURL}, IsLearner: true}
	s.members = append(s.members, added)
	s.changes = append(s.changes, "add learner "+peerURL)
	return added, slices.Clone(s.members), nil
}

func (s *simulated) Promote(_ context.Context, id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.members, func(mb etcdclient.Member) bool { return mb.ID == id })
	s.members[i].IsLearner = false
	s.changes = append(s.changes, "promote "+s.members[i].Name)
	return nil
}

func (s *simulated) Remove(_ context.Context, id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.members, func(mb etcdclient.Member) bool { return mb.ID == id })
	s.changes = append(s.changes, "remove "+s.members[i].Name)
	s.members = slices.Delete(s.members, i, i+1)
	return nil
}

func (s *simulated) MoveLeader(_ context.Context, _ string, to uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes = append(s.changes, fmt.Sprintf("move leader to %d", to))
	return nil
}

// Nudge is an entry after the snapshot: the learners that waited for one announce themselves.
func (s *simulated) Nudge(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nudges++
	for i, mb := range s.members {
		if name, ok := s.silent[mb.PeerURLs[0]]; ok {
			s.members[i].Name = name
			s.members[i].ClientURLs = []string{strings.Replace(mb.PeerURLs[0], ":2380", ":2379", 1)}
			delete(s.silent, mb.PeerURLs[0])
		}
	}
	return nil
}

func (s *simulated) Close() error { return nil }

// storedBackup is an object store that holds one backup's metadata and presigns anything.
type storedBackup struct {
	s3.Objects
	md backup.Metadata
}

func (s *storedBackup) GetObject(_ context.Context, _, key string) (io.ReadCloser, int64, error) {
	var b []byte
	switch key {
	case backup.MetadataKey(s.md.Key):
		b, _ = json.Marshal(s.md)
	case s.md.Key:
		b = []byte(snapshotBytes)
	default:
		return nil, 0, errors.New("NoSuchKey: " + key)
	}
	return io.NopCloser(strings.NewReader(string(b))), int64(len(b)), nil
}

// snapshotBytes are the backup's snapshot.
const snapshotBytes = "an etcd snapshot"

func (s *storedBackup) PresignGet(_ context.Context, bucket, key string, _ time.Duration) (string, error) {
	return "https://s3.example/" + bucket + "/" + key + "?X-Amz-Signature=secret", nil
}

// TestCreate: a bootstrap allocates every member's machine, then starts them all with the
// whole initial cluster, and records the cluster ID once there is a leader. A restore waits
// its namespace's turn, reads nothing it does not need, refuses a backup too new for the
// cluster before any machine exists, and deletes every machine of the attempt when a machine
// refuses the snapshot; a machine that merely failed is left for the next attempt.
func TestCreate(t *testing.T) {
	const noHost = "No valid host was found."
	refused := &machines.RefusedSnapshotError{Reason: errors.New("the snapshot to restore has SHA-256 0000, not the abcd its metadata records")}
	sum := sha256.Sum256([]byte(snapshotBytes))
	stored := backup.Metadata{Format: 1, Key: "ns/old/20261124T101500.000Z-r4711.0e5c.snapshot", EtcdVersion: "3.6.16", Revision: 4711,
		Size: int64(len(snapshotBytes)), SHA256: hex.EncodeToString(sum[:]), Time: time.Date(2026, 11, 24, 10, 15, 0, 0, time.UTC)}
	cases := map[string]struct {
		members        int32
		restore        bool
		encrypted      bool
		backupVersion  string
		startErr       map[string]error
		failed         map[string]string
		providerChecks bool
		turnTaken      bool
		wantErr        string
		wantStarted    []string
		wantDeleted    []string
		wantName       string
	}{
		"ThreeMembers":  {members: 3, wantStarted: []string{"db-0", "db-1", "db-2"}, wantName: "c0ffee"},
		"AMachineFails": {members: 3, startErr: map[string]error{"db-1": errors.New("disk full")}, wantErr: "disk full", wantStarted: []string{"db-0", "db-2"}},
		// Nova's ERROR does not pass: without a quorum of the others Create says so at
		// once (not after bootstrapWait), with Nova's words; with one, they elect a leader.
		"TheOnlyServerFails":    {members: 1, failed: map[string]string{"db-0": noHost}, wantErr: "too many members' servers failed for the others to form a quorum: server of db-0 is ERROR: " + noHost, wantStarted: []string{"db-0"}},
		"TwoServersOfThreeFail": {members: 3, failed: map[string]string{"db-1": noHost, "db-2": noHost}, wantErr: "server of db-1 is ERROR: " + noHost + "; server of db-2 is ERROR: " + noHost, wantStarted: []string{"db-0", "db-1", "db-2"}},
		"OneServerOfThreeFails": {members: 3, failed: map[string]string{"db-2": noHost}, wantStarted: []string{"db-0", "db-1", "db-2"}, wantName: "c0ffee"},
		"Restored":              {members: 3, restore: true, wantStarted: []string{"db-0", "db-1", "db-2"}, wantName: "c0ffee"},
		"RestoreRefused":        {members: 3, restore: true, startErr: map[string]error{"db-2": refused}, wantErr: "cannot be restored, and the machines of the attempt were deleted: the snapshot to restore has SHA-256", wantStarted: []string{"db-0", "db-1"}, wantDeleted: []string{"db-0", "db-1", "db-2"}},
		"RestoreOfANewerEtcd":   {members: 1, restore: true, backupVersion: "3.7.3", wantErr: "restore it into 3.7 or 3.8"},
		"RestoreWaitsItsTurn":   {members: 1, restore: true, turnTaken: true, wantErr: "waiting to restore: namespace ns"},
		"RestoreCheckedForThem": {members: 1, restore: true, providerChecks: true, wantStarted: []string{"db-0"}, wantName: "c0ffee"},
		"EncryptedRestored":     {members: 1, restore: true, encrypted: true, wantStarted: []string{"db-0"}, wantName: "c0ffee"},
		// Servers keep what they are given (user-data): no identity goes there.
		"EncryptedOntoServers": {members: 3, restore: true, encrypted: true, providerChecks: true, wantErr: "restoring an encrypted backup onto OpenStack servers is not supported yet"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			kube := newKube(t)
			if err := kube.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s3"},
				Data:       map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("k"), "AWS_SECRET_ACCESS_KEY": []byte("s"), "S3_ENDPOINT": []byte("https://s3.example")},
			}); err != nil {
				t.Fatal(err)
			}
			ms := newSimulated()
			ms.startErr, ms.failed, ms.providerChecks = tc.startErr, tc.failed, tc.providerChecks
			md := stored
			if tc.backupVersion != "" {
				md.EtcdVersion = tc.backupVersion
			}
			md.Encrypted = tc.encrypted
			id, err := age.GenerateX25519Identity()
			if err != nil {
				t.Fatal(err)
			}
			if err := kube.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "identity"}, Data: map[string][]byte{"age.key": []byte(id.String())},
			}); err != nil {
				t.Fatal(err)
			}
			var reads []string
			turns := transfers.New(1)
			if tc.turnTaken {
				if _, ok := turns.TryAcquire("ns"); !ok {
					t.Fatal("no turn to take")
				}
			}
			e := &external{
				kube: kube, machines: ms, record: &recorded{}, now: time.Now, sleep: machines.Sleep, transfers: turns,
				newCluster: ms.connect,
				newObjects: func(s3.Config) (s3.Objects, error) {
					reads = append(reads, "objects")
					return &storedBackup{md: md}, nil
				},
			}
			cr := cluster("db", v1alpha1.EtcdClusterParameters{Version: "3.6.16", Members: tc.members})
			cr.SetUID("uid")
			if tc.restore {
				cr.Spec.ForProvider.Restore = &v1alpha1.Restore{
					Source: &v1alpha1.BackupDestination{BucketName: ptr.To("backups"), CredentialsSecretRef: &v1alpha1.LocalObjectReference{Name: "s3"}},
					Key:    ptr.To(stored.Key),
				}
				if tc.encrypted {
					cr.Spec.ForProvider.Restore.Decryption = &v1alpha1.Decryption{IdentitySecretRef: v1alpha1.SecretKeyReference{Name: "identity", Key: "age.key"}}
				}
			}
			_, err = e.Create(ctx, cr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Create() = %v, want an error with %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Create() = %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "X-Amz-Signature") {
				t.Errorf("the error quotes the pre-signed URL: %v", err)
			}

			var started []string
			for n, cfg := range ms.started {
				started = append(started, n)
				if cfg.InitialClusterState != "new" || strings.Count(cfg.InitialCluster, "=https://") != int(tc.members) {
					t.Errorf("%s started with initial cluster %q (%s), want every member and state new", n, cfg.InitialCluster, cfg.InitialClusterState)
				}
				if (cfg.Restore != nil) != tc.restore {
					t.Errorf("%s started with restore %v, want one: %v", n, cfg.Restore, tc.restore)
				}
				if r := cfg.Restore; r != nil {
					if r.SHA256 != md.SHA256 || r.Size != md.Size || r.BumpRevision != uint64(v1alpha1.DefaultBumpRevision) {
						t.Errorf("%s restores %d bytes (sha256 %s, bump %d), want the backup's %d (%s), bump %d", n, r.Size, r.SHA256, r.BumpRevision, md.Size, md.SHA256, v1alpha1.DefaultBumpRevision)
					}
					// A backend that checks for itself is not made to wait for a read of
					// the backup by the provider; one that does not is.
					if (r.Checked != nil) != tc.providerChecks {
						t.Errorf("%s: the provider checks the backup: %v, want %v", n, r.Checked != nil, tc.providerChecks)
					}
					if (r.AgeIdentity != "") != tc.encrypted {
						t.Errorf("%s: handed an identity: %t, want %t", n, r.AgeIdentity != "", tc.encrypted)
					}
				}
			}
			slices.Sort(started)
			if diff := cmp.Diff(tc.wantStarted, started); diff != "" {
				t.Errorf("started members -want +got:\n%s", diff)
			}
			slices.Sort(ms.deleted)
			if diff := cmp.Diff(tc.wantDeleted, ms.deleted); diff != "" {
				t.Errorf("deleted machines -want +got:\n%s", diff)
			}
			if got := meta.GetExternalName(cr); got != tc.wantName {
				t.Errorf("external name %q, want %q", got, tc.wantName)
			}
			if tc.turnTaken && len(reads) != 0 {
				t.Error("a restore waiting for its turn read the object store")
			}
		})
	}
}
