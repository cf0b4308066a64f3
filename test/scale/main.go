// Command scale measures the provider at scale next to its floor (make bench-scale): for each
// scenario (SecurityGroups of 5 rules, SecurityGroupAttachments over 50 servers each, Buckets
// with a canned ACL and versioning) and each N, it runs the provider binary against a
// Kubernetes API server and the test bed's backends, creates N managed resources and measures
// the time until all are Ready, the backend calls per resource (the provider's own /metrics),
// the calls and API server writes of a steady-state poll, and the provider's peak RSS and CPU
// time; then it deletes them and makes the same external resources directly with the minimal
// API calls, at the same concurrency: the floor. It writes the results as JSON and, per
// scenario, an SVG plot of time-to-Ready against N.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	goopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis"
	pcv1alpha1 "github.com/stackservices/provider-stackservices/apis/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
)

const namespace = "scale"

// Result is one scenario's figures for one N.
type Result struct {
	Scenario string `json:"scenario"`
	N        int    `json:"n"`
	// Seconds from the first create until every group is Ready, for the provider and the floor.
	ProviderReadySeconds float64 `json:"providerReadySeconds"`
	FloorSeconds         float64 `json:"floorSeconds"`
	Ratio                float64 `json:"ratio"`
	// Backend calls per resource until all were Ready, and the floor's.
	CallsPerResource      float64 `json:"callsPerResource"`
	FloorCallsPerResource float64 `json:"floorCallsPerResource"`
	// Over one poll interval once all are Ready and settled.
	SteadyCallsPerPoll  float64 `json:"steadyCallsPerPoll"`
	SteadyWritesPerPoll float64 `json:"steadyAPIServerWritesPerPoll"`
	// Of those write requests, how many changed the object (updates the API server stored
	// in etcd); the others were writes of an unchanged object.
	SteadyStoredPerPoll float64 `json:"steadyEtcdUpdatesPerPoll"`
	// API server writes to the managed resources (create, update, status) per resource until
	// Ready.
	WritesPerResource float64 `json:"apiServerWritesPerResource"`
	// The longest time from a change by hand (to some of them, once steady) to its repair;
	// 0 for a scenario that does not measure it.
	DriftSeconds float64 `json:"driftSeconds,omitempty"`
	PeakRSSMiB   float64 `json:"providerPeakRSSMiB"`
	// The file-backed part of RSS once steady: pages of mapped files, which are the
	// provider's binary (shared with the page cache, about the same whatever N).
	SteadyRSSFileMiB float64 `json:"providerSteadyRSSFileMiB"`
	// The Go heap in use once steady (after the steady-state poll), of which RSS is a
	// high-water mark plus the runtime's slack.
	SteadyHeapMiB float64 `json:"providerSteadyHeapMiB"`
	CPUSeconds    float64 `json:"providerCPUSeconds"`
}

// Results are a run's.
type Results struct {
	Date        string   `json:"date"`
	Machine     string   `json:"machine"`
	Concurrency int      `json:"concurrency"`
	Poll        string   `json:"poll"`
	Runs        []Result `json:"runs"`
}

type config struct {
	provider, clouds, cloud, out, svgDir string
	// sizes are the Ns of each scenario to run, by name; a scenario without sizes is not run.
	sizes       map[string][]int
	concurrency int
	poll        time.Duration
}

// scenarioNames are the scenarios, in the order they run.
var scenarioNames = []string{"securitygroups", "attachments", "buckets"}

func main() {
	c := config{sizes: map[string][]int{}}
	flag.StringVar(&c.provider, "provider", "", "the provider binary")
	flag.StringVar(&c.clouds, "clouds", os.Getenv("OS_CLIENT_CONFIG_FILE"), "clouds.yaml of the test bed")
	flag.StringVar(&c.cloud, "cloud", "demo", "the cloud of clouds.yaml to use")
	sizes := map[string]*string{
		"securitygroups": flag.String("securitygroups", "100,1000", "numbers of SecurityGroups (5 rules each), comma-separated; empty: none"),
		"attachments":    flag.String("attachments", "", fmt.Sprintf("numbers of SecurityGroupAttachments (%d servers each), comma-separated; empty: none", serversEach)),
		"buckets":        flag.String("buckets", "", "numbers of Buckets (canned ACL, versioning, on versitygw), comma-separated; empty: none"),
	}
	flag.IntVar(&c.concurrency, "concurrency", 20, "concurrent reconciles of each of the provider's controllers (--max-concurrent-reconciles) and concurrent creates of the floor")
	flag.DurationVar(&c.poll, "poll", 30*time.Second, "the provider's poll interval")
	flag.StringVar(&c.out, "out", "_output/bench/scale.json", "results file")
	flag.StringVar(&c.svgDir, "svg-dir", "docs", "where the plots of time-to-Ready against N go (benchmarks-<scenario>.svg)")
	flag.Parse()
	for name, list := range sizes {
		for _, f := range strings.Split(*list, ",") {
			if strings.TrimSpace(f) == "" {
				continue
			}
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				fail("bad -%s %q", name, *list)
			}
			c.sizes[name] = append(c.sizes[name], n)
		}
	}
	if c.provider == "" {
		fail("-provider is required")
	}
	if err := run(context.Background(), c); err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scale: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "scale: "+format+"\n", args...) }

func run(ctx context.Context, c config) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	s := clientgoscheme.Scheme
	if err := apis.AddToScheme(s); err != nil {
		return err
	}
	kube, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	clouds, err := os.ReadFile(c.clouds)
	if err != nil {
		return err
	}
	if err := providerConfig(ctx, kube, clouds, c.cloud); err != nil {
		return err
	}
	neutron, err := newFloorNeutron(ctx, clouds, c.cloud)
	if err != nil {
		return err
	}
	scenarios := map[string]func() (scenario, error){
		"securitygroups": func() (scenario, error) { return securityGroups{neutron: neutron}, nil },
		"attachments":    func() (scenario, error) { return &attachments{neutron: neutron}, nil },
		"buckets":        func() (scenario, error) { return newBuckets(kube) },
	}

	res := Results{Date: time.Now().UTC().Format(time.DateOnly), Machine: machine(), Concurrency: c.concurrency, Poll: c.poll.String()}
	for _, name := range scenarioNames {
		if len(c.sizes[name]) == 0 {
			continue
		}
		sc, err := scenarios[name]()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		var runs []Result
		for _, n := range c.sizes[name] {
			r, err := measure(ctx, c, cfg, kube, sc, n)
			if err != nil {
				return fmt.Errorf("%s, N=%d: %w", name, n, err)
			}
			logf("%d %s: provider %.1fs, floor %.1fs (%.2fx); %.1f calls each (floor %.1f); steady %.0f calls, %.0f write requests and %.0f etcd updates a poll; drift repaired within %.1fs (0: not measured); peak RSS %.0f MiB (file-backed RSS once steady: %.0f MiB), steady heap %.0f MiB, CPU %.1fs",
				n, sc.unit(), r.ProviderReadySeconds, r.FloorSeconds, r.Ratio, r.CallsPerResource, r.FloorCallsPerResource, r.SteadyCallsPerPoll, r.SteadyWritesPerPoll, r.SteadyStoredPerPoll, r.DriftSeconds, r.PeakRSSMiB, r.SteadyRSSFileMiB, r.SteadyHeapMiB, r.CPUSeconds)
			runs = append(runs, r)
		}
		res.Runs = append(res.Runs, runs...)
		if c.svgDir != "" {
			if err := os.MkdirAll(c.svgDir, 0o750); err != nil {
				return err
			}
			svg := filepath.Join(c.svgDir, "benchmarks-"+name+".svg")
			if err := os.WriteFile(svg, plot(res.Date, sc.unit(), runs), 0o600); err != nil {
				return err
			}
			logf("plot: %s", svg)
		}
	}
	if err := os.MkdirAll(filepath.Dir(c.out), 0o750); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(c.out, append(b, '\n'), 0o600); err != nil {
		return err
	}
	logf("results: %s", c.out)
	return nil
}

// measure runs one N of a scenario: prepare, the provider, the floor, cleanup.
func measure(ctx context.Context, c config, cfg *rest.Config, kube client.Client, sc scenario, n int) (Result, error) {
	if err := sc.prepare(ctx, n); err != nil {
		return Result{}, errors.Join(err, sc.cleanup(ctx))
	}
	r, err := measureProvider(ctx, c, cfg, kube, sc, n)
	if err != nil {
		return r, errors.Join(err, sc.cleanup(ctx))
	}
	floor, floorCalls, err := sc.floor(ctx, n, c.concurrency)
	if err != nil {
		return r, errors.Join(fmt.Errorf("floor: %w", err), sc.cleanup(ctx))
	}
	r.FloorSeconds = floor.Seconds()
	r.FloorCallsPerResource = float64(floorCalls) / float64(n)
	r.Ratio = r.ProviderReadySeconds / r.FloorSeconds
	return r, sc.cleanup(ctx)
}

// objectMeta names the i-th managed resource of a scenario, in the benchmark's namespace.
func objectMeta(format string, i int) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf(format, i)}
}

// providerConfigRef is the ProviderConfig providerConfig makes.
func providerConfigRef() xpv2.ManagedResourceSpec {
	return xpv2.ManagedResourceSpec{ProviderConfigReference: &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "default"}}
}

// providerConfig makes the namespace, its credentials Secret and its ProviderConfig.
func providerConfig(ctx context.Context, kube client.Client, clouds []byte, cloud string) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "openstack"}, Data: map[string][]byte{"clouds.yaml": clouds}},
		&pcv1alpha1.ProviderConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "default"},
			Spec: pcv1alpha1.ProviderConfigSpec{
				CloudSettings: pcv1alpha1.CloudSettings{Cloud: cloud},
				Credentials: pcv1alpha1.NamespacedCredentials{Source: xpv2.CredentialsSourceSecret,
					SecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "openstack"}, Key: "clouds.yaml"}},
			},
		},
	}
	for _, o := range objs {
		if err := kube.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
			return err
		}
	}
	return nil
}

// provider is the provider's process.
type provider struct {
	cmd     *exec.Cmd
	metrics string
	pprof   string
}

func startProvider(ctx context.Context, c config) (*provider, error) {
	metricsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := freePort()
	if err != nil {
		return nil, err
	}
	pprofPort, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll("_output/bench", 0o750); err != nil {
		return nil, err
	}
	logFile, err := os.Create("_output/bench/provider.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, c.provider, //nolint:gosec // The binary the make target built.
		// The floor's concurrency; the reconcile rate stays the provider's default (100 a
		// second), which it does not reach: the floor has no rate to match.
		"--poll="+c.poll.String(), "--poll-jitter=0s", "--max-concurrent-reconciles="+strconv.Itoa(c.concurrency),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", healthPort),
		fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &provider{cmd: cmd, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), pprof: fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pprofPort)}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)); err == nil { //nolint:noctx // A local probe.
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.stop()
	return nil, fmt.Errorf("the provider was not ready in a minute: see _output/bench/provider.log")
}

func (p *provider) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// calls sums the provider's requests to the backend.
func (p *provider) calls(backend string) (float64, error) {
	fams, err := scrape(http.DefaultClient, p.metrics)
	if err != nil {
		return 0, err
	}
	return sum(fams["stackservices_backend_requests_total"], func(l map[string]string) bool { return l["backend"] == backend }), nil
}

// heapInUse is the provider's heap in use (MiB), from the Go runtime's metrics.
func (p *provider) heapInUse() (float64, error) {
	fams, err := scrape(http.DefaultClient, p.metrics)
	if err != nil {
		return 0, err
	}
	ms := fams["go_memstats_heap_inuse_bytes"].GetMetric()
	if len(ms) == 0 {
		return 0, fmt.Errorf("the provider's metrics have no go_memstats_heap_inuse_bytes")
	}
	return ms[0].GetGauge().GetValue() / (1 << 20), nil
}

// saveHeapProfile writes the provider's heap profile (after a collection) to path, for
// go tool pprof.
func (p *provider) saveHeapProfile(path string) error {
	resp, err := http.Get(p.pprof + "/heap?gc=1") //nolint:noctx // A local scrape.
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck // Read to the end.
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/heap: %d", p.pprof, resp.StatusCode)
	}
	return os.WriteFile(path, b, 0o600)
}

// usage is the provider's peak RSS, the file-backed part of its RSS now (MiB) and its CPU
// time (s), from /proc.
func (p *provider) usage() (peakRSS, rssFile, cpu float64, err error) {
	pid := p.cmd.Process.Pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kib, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmHWM:":
			peakRSS = kib / 1024
		case "RssFile:":
			rssFile = kib / 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	// Fields after the command (which may hold spaces) start at state; utime and stime are
	// the 14th and 15th fields of the whole line, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return peakRSS, rssFile, (utime + stime) / 100, nil
}

func measureProvider(ctx context.Context, c config, cfg *rest.Config, kube client.Client, sc scenario, n int) (Result, error) {
	r := Result{Scenario: sc.name(), N: n}
	p, err := startProvider(ctx, c)
	if err != nil {
		return r, err
	}
	defer p.stop()
	calls := func() (float64, error) { return p.calls(sc.backend()) }
	writes := func() (float64, error) { w, _, err := apiServerWrites(cfg, sc.resource()); return w, err }
	stored := func() float64 { _, s, _ := apiServerWrites(cfg, sc.resource()); return s }
	calls0, err := calls()
	if err != nil {
		return r, err
	}
	writes0, err := writes()
	if err != nil {
		return r, err
	}

	start := time.Now()
	if err := parallel(n, 50, func(i int) error { return kube.Create(ctx, sc.object(i)) }); err != nil {
		return r, err
	}
	if err := waitAll(ctx, kube, sc, n, 30*time.Minute); err != nil {
		return r, err
	}
	r.ProviderReadySeconds = time.Since(start).Seconds()
	calls1, err := calls()
	if err != nil {
		return r, err
	}
	writes1, err := writes()
	if err != nil {
		return r, err
	}
	r.CallsPerResource = (calls1 - calls0) / float64(n)
	r.WritesPerResource = (writes1 - writes0) / float64(n)

	// Steady state: let the reconciles that follow the creates settle, then one poll.
	time.Sleep(c.poll)
	callsA, _ := calls()
	writesA, _ := writes()
	storedA := stored()
	time.Sleep(c.poll)
	callsB, _ := calls()
	writesB, _ := writes()
	r.SteadyCallsPerPoll, r.SteadyWritesPerPoll, r.SteadyStoredPerPoll = callsB-callsA, writesB-writesA, stored()-storedA
	if d, ok := sc.(drifter); ok {
		longest, err := d.drift(ctx, kube, min(n, driftedResources), 3*c.poll)
		if err != nil {
			return r, fmt.Errorf("drift: %w", err)
		}
		r.DriftSeconds = longest.Seconds()
	}
	if r.PeakRSSMiB, r.SteadyRSSFileMiB, r.CPUSeconds, err = p.usage(); err != nil {
		return r, err
	}
	if r.SteadyHeapMiB, err = p.heapInUse(); err != nil {
		return r, err
	}
	profile := filepath.Join("_output/bench", fmt.Sprintf("heap-%s-%d.pprof", sc.name(), n))
	if err := p.saveHeapProfile(profile); err != nil {
		return r, err
	}
	logf("heap profile in steady state: %s (go tool pprof -top -sample_index=inuse_space %s)", profile, profile)
	logf("%d %s, provider: %.1fs to Ready; %.1f calls each; steady %.0f calls, %.0f write requests a poll; peak RSS %.0f MiB (file-backed RSS once steady: %.0f MiB), steady heap %.0f MiB, CPU %.1fs",
		n, sc.unit(), r.ProviderReadySeconds, r.CallsPerResource, r.SteadyCallsPerPoll, r.SteadyWritesPerPoll, r.PeakRSSMiB, r.SteadyRSSFileMiB, r.SteadyHeapMiB, r.CPUSeconds)

	// Delete them all, and wait until the provider has deleted their external resources.
	// One request each: one delete of the whole collection of thousands outlasts the API
	// server's request timeout.
	if err := parallel(n, 50, func(i int) error { return client.IgnoreNotFound(kube.Delete(ctx, sc.object(i))) }); err != nil {
		return r, err
	}
	deadline := time.Now().Add(30 * time.Minute)
	for {
		l := sc.newList()
		if err := kube.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return r, err
		}
		if len(l.GetItems()) == 0 {
			return r, nil
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d %s not deleted in 30 minutes", len(l.GetItems()), sc.unit())
		}
		time.Sleep(time.Second)
	}
}

// waitAll waits until n managed resources of the scenario are Ready.
func waitAll(ctx context.Context, kube client.Client, sc scenario, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		l := sc.newList()
		if err := kube.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return err
		}
		ready := 0
		for _, mr := range l.GetItems() {
			if mr.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
				ready++
			}
		}
		if ready == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d %s Ready after %s", ready, n, sc.unit(), timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// apiServerWrites sums the API server's write requests to the resource (and its status), and
// its updates of them in etcd.
func apiServerWrites(cfg *rest.Config, gr schema.GroupResource) (requests, stored float64, err error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return 0, 0, err
	}
	fams, err := scrape(hc, strings.TrimSuffix(cfg.Host, "/")+"/metrics")
	if err != nil {
		return 0, 0, err
	}
	requests = sum(fams["apiserver_request_total"], func(l map[string]string) bool {
		return l["group"] == gr.Group && l["resource"] == gr.Resource && (l["verb"] == "POST" || l["verb"] == "PUT" || l["verb"] == "PATCH" || l["verb"] == "APPLY")
	})
	for _, m := range fams["etcd_request_duration_seconds"].GetMetric() {
		if labels := labelsOf(m); labels["operation"] == "update" && labels["type"] == gr.String() {
			stored += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return requests, stored, nil
}

func scrape(hc *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	resp, err := hc.Get(url) //nolint:noctx,gosec // A scrape of the provider this harness started, on 127.0.0.1.
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close() //nolint:errcheck // Read to the end.
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

func sum(f *dto.MetricFamily, keep func(map[string]string) bool) float64 {
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		if keep(labelsOf(m)) {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

func labelsOf(m *dto.Metric) map[string]string {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}

// floorNeutron is the floor's Neutron client, made directly from the clouds.yaml, and the
// count of its requests.
type floorNeutron struct {
	c     *gophercloud.ServiceClient
	calls *atomic.Int64
}

func newFloorNeutron(ctx context.Context, clouds []byte, cloud string) (*floorNeutron, error) {
	c, err := openstack.ParseCredentials(clouds, openstack.ParseOptions{Cloud: cloud})
	if err != nil {
		return nil, err
	}
	pc, err := goopenstack.NewClient(c.Auth.IdentityEndpoint)
	if err != nil {
		return nil, err
	}
	calls := &atomic.Int64{}
	pc.HTTPClient = http.Client{Transport: countingTransport{next: http.DefaultTransport, n: calls}}
	if err := goopenstack.Authenticate(ctx, pc, c.Auth); err != nil {
		return nil, err
	}
	nc, err := goopenstack.NewNetworkV2(pc, c.Endpoint)
	return &floorNeutron{c: nc, calls: calls}, err
}

// retried calls f again, up to 5 times, while Neutron answers 5xx (a busy Neutron does): a
// plain client would, and the provider does by requeueing.
func retried(f func() error) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || attempt == 5 || !gophercloud.ResponseCodeIs(err, http.StatusInternalServerError) && !gophercloud.ResponseCodeIs(err, http.StatusServiceUnavailable) {
			return err
		}
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
	}
}

// parallel runs f(0..n-1) with at most k at once, and returns the first error.
func parallel(n, k int, f func(int) error) error {
	var (
		wg    sync.WaitGroup
		first error
		mu    sync.Mutex
	)
	sem := make(chan struct{}, k)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // Bound and closed at once.
	if err != nil {
		return 0, err
	}
	defer l.Close()                          //nolint:errcheck // Only its port was wanted.
	return l.Addr().(*net.TCPAddr).Port, nil //nolint:forcetypeassert // A TCP listener.
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(l[strings.Index(l, ":")+1:])
				break
			}
		}
	}
	return fmt.Sprintf("%d cores (%s), %s", runtime.NumCPU(), model, runtime.Version())
}

// plot draws time-to-Ready against N of one scenario, provider and floor, as an SVG line chart.
func plot(date, unit string, runs []Result) []byte {
	const w, h, left, bottom, top, right = 640.0, 400.0, 70.0, 50.0, 40.0, 20.0
	maxN, maxT := 0.0, 0.0
	for _, r := range runs {
		maxN = math.Max(maxN, float64(r.N))
		maxT = math.Max(maxT, math.Max(r.ProviderReadySeconds, r.FloorSeconds))
	}
	maxT = math.Ceil(maxT*1.1 + 1)
	x := func(n float64) float64 { return left + n/maxN*(w-left-right) }
	y := func(t float64) float64 { return h - bottom - t/maxT*(h-bottom-top) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14">%s to Ready: provider vs floor, %s</text>`+"\n", left, unit, date)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", left, top, left, h-bottom)
	for i := 0; i <= 4; i++ {
		t := maxT * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%.0fs</text>`+"\n", left-6, y(t)+4, t)
	}
	for _, r := range runs {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%d</text>`+"\n", x(float64(r.N)), h-bottom+18, r.N)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">N</text>`+"\n", (left+w-right)/2, h-10)
	for _, s := range []struct {
		name, color string
		t           func(Result) float64
	}{{"provider", "#c0392b", func(r Result) float64 { return r.ProviderReadySeconds }}, {"floor", "#2471a3", func(r Result) float64 { return r.FloorSeconds }}} {
		var pts []string
		for _, r := range runs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(r.N)), y(s.t(r))))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(float64(r.N)), y(s.t(r)), s.color)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), s.color)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="#c0392b">provider</text>`+"\n", left+10, top+15)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="#2471a3">floor</text>`+"\n", left+10, top+30)
	b.WriteString("</svg>\n")
	return b.Bytes()
}
