//go:build integration

package etcdcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/stackservices/provider-stackservices/apis"
	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/internal/controller/etcd/authority"
	"github.com/stackservices/provider-stackservices/internal/etcd/backup"
	"github.com/stackservices/provider-stackservices/internal/machines"
	"github.com/stackservices/provider-stackservices/internal/machines/local"
	"github.com/stackservices/provider-stackservices/internal/transfers"
)

// BenchmarkBackupRestore measures a backup of a real single-member cluster (local machines)
// of BENCH_BACKUP_MIB MiB (default 64) into versitygw through the provider's backup runner,
// and a restore of it into a new cluster through Create, each next to its floor in the same
// run: etcdctl snapshot save to a file and an upload of the file (the same multipart client),
// and a download of the object and etcdutl snapshot restore. Each pair alternates which runs
// first, and each part starts after a sync (make bench-backup BENCH_BACKUP_TIMES=4x evens
// out the order). It reports the times, their
// ratios, and how much the process's RSS grew during the backup (sampled every 20ms).
//
//	make bench-backup    (1 GiB)
func BenchmarkBackupRestore(b *testing.B) {
	ctx := context.Background()
	binaries := os.Getenv("ETCD_BINARIES_DIR")
	if binaries == "" || os.Getenv("VGW_ENDPOINT") == "" {
		b.Fatal("ETCD_BINARIES_DIR or VGW_ENDPOINT is not set (run `make bench` or `make bench-backup`)")
	}
	mib := 64
	if v := os.Getenv("BENCH_BACKUP_MIB"); v != "" {
		var err error
		if mib, err = strconv.Atoi(v); err != nil || mib < 1 {
			b.Fatalf("BENCH_BACKUP_MIB=%q", v)
		}
	}
	lm, err := local.New(local.Options{Dir: b.TempDir(), BinariesDir: binaries, AddressRange: local.AddressRange{
		First: mustAddr("127.0.8.1"), Last: mustAddr("127.0.8.254"),
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = lm.Purge(context.Background()) }()

	cfg := s3.Config{Endpoint: os.Getenv("VGW_ENDPOINT"), Region: os.Getenv("VGW_REGION"), AccessKeyID: os.Getenv("VGW_ACCESS_KEY"), SecretAccessKey: os.Getenv("VGW_SECRET_KEY")}
	objs, err := s3.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	bucket := fmt.Sprintf("bench-backup-%d", time.Now().UnixNano())
	if err := objs.CreateBucket(ctx, bucket); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = objs.EmptyBucket(context.Background(), bucket)
		_ = objs.DeleteBucket(context.Background(), bucket)
	}()

	s := kruntime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apis.AddToScheme(s)
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "s3"},
		Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte(cfg.AccessKeyID), "AWS_SECRET_ACCESS_KEY": []byte(cfg.SecretAccessKey),
			"S3_ENDPOINT": []byte(cfg.Endpoint), "AWS_REGION": []byte(cfg.Region)},
	}).Build()
	dest := v1alpha1.BackupDestination{BucketName: &bucket, CredentialsSecretRef: &v1alpha1.LocalObjectReference{Name: "s3"}}
	quota := int64(mib+512) << 20
	cr := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "bench", UID: "bench-backup-uid", CreationTimestamp: metav1.Now()},
		Spec: v1alpha1.EtcdClusterSpec{ForProvider: v1alpha1.EtcdClusterParameters{
			Version: "3.6.16", Members: 1, Settings: &v1alpha1.Settings{QuotaBackendBytes: ptr.To(max(quota, 2<<30))},
			Backup: &v1alpha1.Backup{Schedule: "@daily", Destination: dest},
		}},
	}
	newObjects := func(c s3.Config) (s3.Objects, error) { return s3.New(c) }
	e := &external{kube: kube, machines: lm, newCluster: etcdclient.New, newObjects: newObjects, record: event.NewNopRecorder(),
		transfers: transfers.New(1), now: time.Now, sleep: machines.Sleep}
	defer func() { _ = e.Disconnect(ctx) }()
	if _, err := e.Create(ctx, cr); err != nil {
		b.Fatal(err)
	}
	if _, err := e.Observe(ctx, cr); err != nil {
		b.Fatal(err)
	}
	a, _, err := authority.Load(ctx, kube, cr)
	if err != nil {
		b.Fatal(err)
	}
	tlsCfg, err := a.TLSConfig()
	if err != nil {
		b.Fatal(err)
	}
	endpoint := cr.Status.AtProvider.Endpoints[0]
	fill(b, ctx, endpoint, a, mib)
	runtime.GC()
	debug.FreeOSMemory()

	dir := b.TempDir()
	certs := writeClientCerts(b, dir, a)
	ctlDir := filepath.Dir(mustBinary(b, binaries, "etcdctl"))
	r := newBackups(1, newObjects, etcdclient.New)
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = r.Start(bctx) }()

	var tOurs, tFloor, tRestore, tRestoreFloor, tStartFloor time.Duration
	var growth int64
	var size int64
	for i := 0; b.Loop(); i++ {
		// Floor: etcdctl snapshot save, then the file uploaded.
		backupFloor := func() {
			file := filepath.Join(dir, "floor.db")
			defer os.Remove(file)
			settle()
			t0 := time.Now()
			run(b, filepath.Join(ctlDir, "etcdctl"), "snapshot", "save", file, "--endpoints="+endpoint, "--cacert="+certs[0], "--cert="+certs[1], "--key="+certs[2])
			f, err := os.Open(file)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := objs.UploadStream(ctx, bucket, fmt.Sprintf("floor/%d.db", i), f, backup.DefaultPartSize); err != nil {
				b.Fatal(err)
			}
			_ = f.Close()
			tFloor += time.Since(t0)
		}
		// Ours: the backup runner, as a scheduled backup runs.
		var res backupResult
		backupOurs := func() {
			settle()
			base := rss()
			var peak atomic.Int64
			stop := make(chan struct{})
			go func() {
				for {
					if v := rss(); v > peak.Load() {
						peak.Store(v)
					}
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}()
			t1 := time.Now()
			res = r.run(ctx, backupJob{
				uid: cr.GetUID(), namespace: cr.GetNamespace(), s3: cfg, policy: backup.Policy{KeepLast: 100},
				store:    backup.Store{Bucket: bucket, Prefix: "bench/big/", Owner: string(cr.GetUID())},
				endpoint: endpoint, tls: tlsCfg,
				request: backup.Request{Cluster: "bench/big", Member: "big-0", EtcdVersion: "3.6.16", Now: t1},
			})
			tOurs += time.Since(t1)
			close(stop)
			if res.err != nil {
				b.Fatal(res.err)
			}
			growth = max(growth, peak.Load()-base)
			size = res.taken.Size
		}
		// Restore floor: the object downloaded, then etcdutl snapshot restore.
		restoreFloor := func() {
			snapshot := filepath.Join(dir, "restore.db")
			defer os.Remove(snapshot)
			settle()
			t2 := time.Now()
			body, _, err := objs.GetObject(ctx, bucket, res.taken.Key)
			if err != nil {
				b.Fatal(err)
			}
			out, err := os.Create(snapshot)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(out, body); err != nil {
				b.Fatal(err)
			}
			_ = body.Close()
			_ = out.Close()
			data := filepath.Join(dir, fmt.Sprintf("restored-%d", i))
			const peer, client = "http://127.0.8.250:2380", "http://127.0.8.250:2379"
			run(b, filepath.Join(ctlDir, "etcdutl"), "snapshot", "restore", snapshot, "--data-dir="+data,
				"--name=r", "--initial-cluster=r="+peer, "--initial-advertise-peer-urls="+peer,
				"--bump-revision=1000000000", "--mark-compacted")
			tRestoreFloor += time.Since(t2)
			// And the restored member started and answering, which a restore through Create
			// includes (a cluster with a leader).
			tStartFloor += startAndAnswer(b, ctx, filepath.Join(ctlDir, "etcd"), data, peer, client)
			_ = os.RemoveAll(data)
		}
		// Ours: a new cluster made from the backup, through Create (URL, members restored
		// and started, a leader).
		restoreOurs := func() {
			restored := &v1alpha1.EtcdCluster{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("restored-%d", i), Namespace: "bench", UID: types.UID("bench-restore-uid-" + strconv.Itoa(i))},
				Spec: v1alpha1.EtcdClusterSpec{ForProvider: v1alpha1.EtcdClusterParameters{
					Version: "3.6.16", Members: 1, Settings: cr.Spec.ForProvider.Settings,
					Restore: &v1alpha1.Restore{Source: &dest, Key: &res.taken.Key},
				}},
			}
			settle()
			t3 := time.Now()
			if _, err := e.Create(ctx, restored); err != nil {
				b.Fatal(err)
			}
			tRestore += time.Since(t3)
			if err := lm.Delete(ctx, string(restored.GetUID()), restored.GetName()+"-0"); err != nil {
				b.Fatal(err)
			}
		}
		// Each goes first every other time: the one that runs second finds the object in the
		// page cache, and the disk still writing back what the first one wrote.
		if i%2 == 0 {
			backupFloor()
			backupOurs()
			restoreFloor()
			restoreOurs()
		} else {
			backupOurs()
			backupFloor()
			restoreOurs()
			restoreFloor()
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(size)/(1<<20), "MiB")
	b.ReportMetric(tFloor.Seconds()/n, "floor-backup-s")
	b.ReportMetric(tOurs.Seconds()/n, "backup-s")
	b.ReportMetric(float64(tOurs)/float64(tFloor), "backup/floor")
	b.ReportMetric(tRestoreFloor.Seconds()/n, "floor-restore-s")
	b.ReportMetric(tRestore.Seconds()/n, "restore-s")
	b.ReportMetric(float64(tRestore)/float64(tRestoreFloor), "restore/floor")
	b.ReportMetric(float64(tRestore)/float64(tRestoreFloor+tStartFloor), "restore/floor+start")
	b.ReportMetric(float64(growth)/(1<<20), "rss-growth-MiB")
}

// startAndAnswer starts etcd on a restored data directory and returns how long until it
// answers a read; it stops it after.
func startAndAnswer(b *testing.B, ctx context.Context, bin, data, peer, client string) time.Duration {
	b.Helper()
	t0 := time.Now()
	cmd := exec.Command(bin, "--name=r", "--data-dir="+data, "--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--listen-client-urls="+client, "--advertise-client-urls="+client, "--initial-cluster=r="+peer)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Get(rctx, "/fill/000000")
		cancel()
		if err == nil {
			return time.Since(t0)
		}
		if time.Since(t0) > time.Minute {
			b.Fatalf("the restored etcd does not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fill writes about mib MiB of values of 1 MiB (under etcd's 1.5 MiB request limit).
func fill(b *testing.B, ctx context.Context, endpoint string, a *authority.Authority, mib int) {
	b.Helper()
	tlsCfg, err := a.TLSConfig()
	if err != nil {
		b.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsCfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	value := strings.Repeat("v", 1<<20-64)
	for i := range mib {
		// Distinct values, so that nothing compresses away.
		if _, err := c.Put(ctx, fmt.Sprintf("/fill/%06d", i), strconv.Itoa(i)+value[len(strconv.Itoa(i)):]); err != nil {
			b.Fatal(err)
		}
	}
}

func writeClientCerts(b *testing.B, dir string, a *authority.Authority) [3]string {
	b.Helper()
	out := [3]string{filepath.Join(dir, "ca.crt"), filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")}
	for i, d := range [][]byte{a.CA.CertPEM, a.Client.CertPEM, a.Client.KeyPEM} {
		if err := os.WriteFile(out[i], d, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

func mustBinary(b *testing.B, dir, name string) string {
	b.Helper()
	p := filepath.Join(dir, "v3.6.16", name)
	if _, err := os.Stat(p); err != nil {
		b.Fatal(err)
	}
	return p
}

func run(b *testing.B, bin string, args ...string) {
	b.Helper()
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
}

// settle writes back what the previous step wrote, so that the next one's time holds its
// own writes only.
func settle() { syscall.Sync() }

// rss is the process's resident set size in bytes.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
