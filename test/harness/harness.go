// Package harness starts what the integration tests run against: a real kube-apiserver (with
// the binaries cluster/tools.sh builds) holding the provider's CRDs, the provider's
// controllers in-process, and clients for the real OpenStack that cluster/openstack.sh runs.
//
// Nothing here is optional: when a server is missing, Start fails with a message that says
// which script brings it up.
package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	goopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis"
	"github.com/stackservices/provider-stackservices/apis/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	providercontroller "github.com/stackservices/provider-stackservices/internal/controller"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
	"github.com/stackservices/provider-stackservices/internal/machines"
	"github.com/stackservices/provider-stackservices/internal/machines/local"
	osmachines "github.com/stackservices/provider-stackservices/internal/machines/openstack"
	"github.com/stackservices/provider-stackservices/internal/transfers"
)

// Clouds names the entries of the test bed's clouds.yaml.
const (
	CloudDemo  = "demo"
	CloudAdmin = "admin"
)

// Env is a running test bed.
type Env struct {
	Kube       client.Client
	Config     *rest.Config
	CloudsYAML []byte
	// Neutron is a gophercloud client for the demo project, for tests to look at (and tamper
	// with) Neutron directly.
	Neutron *gophercloud.ServiceClient
	// Logins counts the Keystone logins the provider made.
	Logins *atomic.Int64
	// Requests records every HTTP request the provider made to OpenStack.
	Requests *RequestLog
	// Logs holds everything the provider logged, at debug level.
	Logs *LogBuffer
	// Machines runs the members of EtcdClusters as local processes; EtcdBinaries is the
	// directory with one folder per etcd version it takes them from.
	Machines     *local.Backend
	EtcdBinaries string

	stop        func()
	scheme      *kruntime.Scheme
	opts        Options
	apiEnv      *envtest.Environment
	machinesDir string
}

// RepoRoot is the root of the repository, found from this file's location.
func RepoRoot() string {
	_, f, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(f), "..", ".."))
}

// Options tune the provider the harness runs.
type Options struct {
	Poll time.Duration
	// Crash, when set, stops the provider right after the external create it matches, as if
	// the process had been killed there (see Crash).
	Crash *Crash
	// MachineAddresses are the loopback addresses of the etcd members this provider runs
	// (zero: 127.0.4.1-254). Test beds running at the same time need ranges of their own.
	MachineAddresses local.AddressRange
}

// Start brings up the control plane and the provider. Call Stop when done.
func Start(o Options) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, fmt.Errorf("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, or set it to $(cluster/tools.sh path kube)")
	}
	cloudsPath := os.Getenv("OS_CLIENT_CONFIG_FILE")
	if cloudsPath == "" {
		return nil, fmt.Errorf("OS_CLIENT_CONFIG_FILE is not set: start OpenStack with `cluster/openstack.sh up` and source $(cluster/openstack.sh env)")
	}
	clouds, err := os.ReadFile(cloudsPath) //nolint:gosec // A path the test bed wrote.
	if err != nil {
		return nil, fmt.Errorf("cannot read the test bed's clouds.yaml: %w", err)
	}

	etcdBinaries := os.Getenv("ETCD_BINARIES_DIR")
	if etcdBinaries == "" {
		return nil, fmt.Errorf("ETCD_BINARIES_DIR is not set: build etcd with `cluster/tools.sh etcd@v3.5.35 etcd@v3.6.16 etcd@v3.7.3` and set it to $(dirname $(cluster/tools.sh path etcd))")
	}
	// cluster/test.sh names a project-local parent, so that it can stop members a test run
	// that was killed left behind.
	machinesDir, err := os.MkdirTemp(os.Getenv("TEST_MACHINES_DIR"), "stackservices-machines-")
	if err != nil {
		return nil, err
	}
	// Addresses of their own, away from `make dev`'s members (127.0.2.x) that may be running.
	addresses := o.MachineAddresses
	if !addresses.First.IsValid() {
		addresses = local.AddressRange{First: netip.MustParseAddr("127.0.4.1"), Last: netip.MustParseAddr("127.0.4.254")}
	}
	lm, err := local.New(local.Options{Dir: machinesDir, BinariesDir: etcdBinaries, AddressRange: addresses})
	if err != nil {
		return nil, fmt.Errorf("cannot set up local machines for etcd members: %w", err)
	}

	e := &Env{CloudsYAML: clouds, Logins: &atomic.Int64{}, Requests: &RequestLog{}, Logs: logs, Machines: lm, EtcdBinaries: etcdBinaries, machinesDir: machinesDir}
	e.apiEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "package", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := e.apiEnv.Start()
	if err != nil {
		return nil, fmt.Errorf("cannot start kube-apiserver and etcd from KUBEBUILDER_ASSETS: %w", err)
	}
	e.Config = cfg

	s := kruntime.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apis.AddToScheme} {
		if err := add(s); err != nil {
			_ = e.apiEnv.Stop()
			return nil, err
		}
	}
	e.Kube, err = client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = e.apiEnv.Stop()
		return nil, err
	}

	e.Neutron, err = neutronClient(clouds)
	if err != nil {
		_ = e.apiEnv.Stop()
		return nil, fmt.Errorf("cannot reach Neutron as the demo user (is `cluster/openstack.sh up` running?): %w", err)
	}

	if err := e.startProvider(s, o); err != nil {
		_ = e.apiEnv.Stop()
		return nil, err
	}
	return e, nil
}

// logs holds everything every provider of this process logged, at debug level (what --debug
// prints), so tests can search it (for secrets, say); the test's output shows it with
// TEST_DEBUG set. controller-runtime's logger is global: it is set once, for all Envs.
var (
	logs       = &LogBuffer{}
	setLogOnce sync.Once
)

func (e *Env) startProvider(s *kruntime.Scheme, o Options) error {
	setLogOnce.Do(func() {
		var out io.Writer = logs
		if os.Getenv("TEST_DEBUG") != "" {
			out = io.MultiWriter(os.Stderr, logs)
		}
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(out), zap.Level(zapcore.DebugLevel)))
	})
	e.scheme, e.opts = s, o
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:  s,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Crash tests run a second provider, and restart it, in this process.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	log := logging.NewLogrLogger(ctrl.Log.WithName("provider"))
	// killed is this provider's: once its crash fires, it makes no request any more, as a
	// killed process would not; the provider Restart starts is a new one.
	killed := &atomic.Bool{}
	wrap := func(rt http.RoundTripper) http.RoundTripper {
		var next = rt
		if o.Crash != nil {
			next = &crashing{next: rt, crash: o.Crash, killed: killed}
		}
		return &counting{next: next, logins: e.Logins, all: e.Requests}
	}
	sessions := openstack.NewSessionCache(openstack.SessionOptions{
		UserAgent:     "provider-stackservices/integration-test",
		WrapTransport: wrap,
	})
	mo := managedcontroller.Options{
		Options: controller.Options{
			Logger:                  log,
			MaxConcurrentReconciles: 5,
			PollInterval:            o.Poll,
			GlobalRateLimiter:       ratelimiter.NewGlobal(100),
			Features:                &feature.Flags{},
		},
		OpenStack: openstack.NewConnector(mgr.GetClient(),
			resource.NewProviderConfigUsageTracker(mgr.GetClient(), &v1alpha1.ProviderConfigUsage{}), sessions),
		WrapTransport: wrap,
		LocalMachines: e.Machines,
		Transfers:     transfers.New(transfers.InReconcile),
		// The host reaches the test bed's servers from the gateway addresses of their
		// subnets, all inside the benchmarking range.
		EtcdProviderCIDRs: []string{"198.18.0.0/15"},
	}
	// The SHA-256 sums of the test bed's mirror of etcd releases (cluster/openstack.sh).
	if sums := os.Getenv("TESTBED_ETCD_SHA256SUMS"); sums != "" {
		mo.EtcdReleaseChecksums = osmachines.ChecksumsFile(sums)
	}
	if o.Crash != nil && o.Crash.AfterMachineStart != nil {
		mo.LocalMachines = &crashingMachines{Machines: e.Machines, crash: o.Crash}
	}
	mo.Features.Enable(feature.EnableBetaManagementPolicies)
	if err := providercontroller.SetupGated(mgr, mo); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "provider manager stopped: %v\n", err)
		}
	}()
	e.stop = func() { cancel(); <-done }
	return nil
}

// Restart stops the provider and starts it again, as a restarted process would be: new
// session cache, new controllers, nothing remembered but what the API server holds. A Crash
// that fired stays spent.
func (e *Env) Restart() error {
	if e.stop != nil {
		e.stop()
	}
	return e.startProvider(e.scheme, e.opts)
}

// A Crash stops the provider the moment an external create it matches has succeeded: the
// response never reaches the controller, so the controller records nothing of what it made,
// as if the process had been killed right after the create. It fires once; the test then
// calls Env.Restart.
type Crash struct {
	// Match says whether a request is the create to crash after.
	Match func(*http.Request) bool
	// AfterMachineStart says whether the start of an etcd member's machine is the create to
	// crash after.
	AfterMachineStart func(cluster, member string) bool

	once  sync.Once
	fired chan struct{}
	mu    sync.Mutex
}

// Fired is closed once the create was made and the provider frozen.
func (c *Crash) Fired() <-chan struct{} { return c.channel() }

func (c *Crash) channel() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fired == nil {
		c.fired = make(chan struct{})
	}
	return c.fired
}

// crashing lets the matched create through, then holds its response until the request is
// cancelled (the provider stops) and fails it. Every later request of the same provider
// fails at once: what a killed process would have sent (an abort, a cleanup) never goes out.
type crashing struct {
	next   http.RoundTripper
	crash  *Crash
	killed *atomic.Bool
}

func (c *crashing) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.killed.Load() {
		return nil, fmt.Errorf("the provider was killed")
	}
	select {
	case <-c.crash.Fired():
		return c.next.RoundTrip(r)
	default:
	}
	if c.crash.Match == nil || !c.crash.Match(r) {
		return c.next.RoundTrip(r)
	}
	rsp, err := c.next.RoundTrip(r)
	if err != nil || rsp.StatusCode >= 300 {
		return rsp, err
	}
	_ = rsp.Body.Close()
	if !c.crash.fire() {
		return nil, fmt.Errorf("the provider crashed")
	}
	c.killed.Store(true)
	<-r.Context().Done()
	return nil, fmt.Errorf("the provider was killed after this request succeeded")
}

// fire marks the crash as happened; false when it already had.
func (c *Crash) fire() bool {
	fired := false
	c.once.Do(func() { close(c.channel()); fired = true })
	return fired
}

// crashingMachines freezes the provider after the member start the crash matches.
type crashingMachines struct {
	machines.Machines
	crash *Crash
}

func (c *crashingMachines) Start(ctx context.Context, cluster, name string, cfg machines.MemberConfig) (machines.Machine, error) {
	m, err := c.Machines.Start(ctx, cluster, name, cfg)
	if err != nil || !c.crash.AfterMachineStart(cluster, name) || !c.crash.fire() {
		return m, err
	}
	<-ctx.Done()
	return machines.Machine{}, fmt.Errorf("the provider was killed after this member started")
}

// Stop stops the provider and the control plane, and every etcd member the tests left.
func (e *Env) Stop() error {
	if e.stop != nil {
		e.stop()
	}
	if err := e.Machines.Purge(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "cannot delete the local etcd machines: %v\n", err)
	}
	_ = os.RemoveAll(e.machinesDir)
	return e.apiEnv.Stop()
}

// NewNamespace creates a namespace holding a credentials Secret (the test bed's whole
// clouds.yaml) and a ProviderConfig named "default" that picks the demo cloud.
func (e *Env) NewNamespace(ctx context.Context, name string) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "openstack-credentials"},
			Data:       map[string][]byte{"clouds.yaml": e.CloudsYAML},
		},
		&v1alpha1.ProviderConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "default"},
			Spec: v1alpha1.ProviderConfigSpec{
				CloudSettings: v1alpha1.CloudSettings{Cloud: CloudDemo},
				Credentials: v1alpha1.NamespacedCredentials{
					Source:    "Secret",
					SecretRef: localKey("openstack-credentials", "clouds.yaml"),
				},
			},
		},
	}
	for _, o := range objs {
		if err := e.Kube.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// NewClusterConfig creates a ClusterProviderConfig named name with the demo credentials of
// namespace ns (made by NewNamespace) and the tenancy supplied, and deletes it when the test
// ends. Tests use one per namespace, so that what one opens to its namespace opens nothing to
// another test's.
func (e *Env) NewClusterConfig(t testing.TB, name, ns string, tenancy *v1alpha1.Tenancy) {
	t.Helper()
	cpc := &v1alpha1.ClusterProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClusterProviderConfigSpec{
			CloudSettings: v1alpha1.CloudSettings{Cloud: CloudDemo},
			Credentials: v1alpha1.ClusterCredentials{
				Source: xpv2.CredentialsSourceSecret,
				CommonCredentialSelectors: xpv2.CommonCredentialSelectors{SecretRef: &xpv2.SecretKeySelector{
					SecretReference: xpv2.SecretReference{Namespace: ns, Name: "openstack-credentials"},
					Key:             "clouds.yaml",
				}},
			},
			Tenancy: tenancy,
		},
	}
	if err := e.Kube.Create(Ctx(t), cpc); err != nil {
		t.Fatalf("cannot create the ClusterProviderConfig %s: %v", name, err)
	}
	t.Cleanup(func() { _ = e.Kube.Delete(context.Background(), cpc) })
}

// AdminIdentity returns an identity v3 client logged in as the test bed's admin.
func (e *Env) AdminIdentity(ctx context.Context) (*gophercloud.ServiceClient, error) {
	c, err := openstack.ParseCredentials(e.CloudsYAML, openstack.ParseOptions{Cloud: CloudAdmin})
	if err != nil {
		return nil, err
	}
	pc, err := goopenstack.AuthenticatedClient(ctx, c.Auth)
	if err != nil {
		return nil, err
	}
	return goopenstack.NewIdentityV3(pc, c.Endpoint)
}

// ComputeMicroversion is the Nova API version the tests speak: 2.79 has embedded flavors,
// user-data and server tags.
const ComputeMicroversion = "2.79"

// Compute returns a Nova client of the named cloud of the test bed's clouds.yaml (CloudDemo,
// CloudAdmin).
func (e *Env) Compute(ctx context.Context, cloud string) (*gophercloud.ServiceClient, error) {
	pc, eo, err := e.provider(ctx, cloud)
	if err != nil {
		return nil, err
	}
	cc, err := goopenstack.NewComputeV2(pc, eo)
	if err != nil {
		return nil, err
	}
	cc.Microversion = ComputeMicroversion
	return cc, nil
}

// BlockStorage returns a Cinder client of the named cloud.
func (e *Env) BlockStorage(ctx context.Context, cloud string) (*gophercloud.ServiceClient, error) {
	pc, eo, err := e.provider(ctx, cloud)
	if err != nil {
		return nil, err
	}
	return goopenstack.NewBlockStorageV3(pc, eo)
}

// Network returns a Neutron client of the named cloud (the admin sees every project's).
func (e *Env) Network(ctx context.Context, cloud string) (*gophercloud.ServiceClient, error) {
	pc, eo, err := e.provider(ctx, cloud)
	if err != nil {
		return nil, err
	}
	return goopenstack.NewNetworkV2(pc, eo)
}

// Image returns a Glance client of the named cloud.
func (e *Env) Image(ctx context.Context, cloud string) (*gophercloud.ServiceClient, error) {
	pc, eo, err := e.provider(ctx, cloud)
	if err != nil {
		return nil, err
	}
	return goopenstack.NewImageV2(pc, eo)
}

func (e *Env) provider(ctx context.Context, cloud string) (*gophercloud.ProviderClient, gophercloud.EndpointOpts, error) {
	c, err := openstack.ParseCredentials(e.CloudsYAML, openstack.ParseOptions{Cloud: cloud})
	if err != nil {
		return nil, gophercloud.EndpointOpts{}, err
	}
	pc, err := goopenstack.AuthenticatedClient(ctx, c.Auth)
	return pc, c.Endpoint, err
}

func neutronClient(clouds []byte) (*gophercloud.ServiceClient, error) {
	c, err := openstack.ParseCredentials(clouds, openstack.ParseOptions{Cloud: CloudDemo})
	if err != nil {
		return nil, err
	}
	pc, err := goopenstack.AuthenticatedClient(context.Background(), c.Auth)
	if err != nil {
		return nil, err
	}
	return goopenstack.NewNetworkV2(pc, c.Endpoint)
}

// counting records requests, and counts Keystone logins among them.
type counting struct {
	next   http.RoundTripper
	logins *atomic.Int64
	all    *RequestLog
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.all.add(r.Method+" "+r.URL.Path, r.Header.Get("X-Auth-Token"))
	if r.Method == http.MethodPost && filepath.Base(r.URL.Path) == "tokens" {
		c.logins.Add(1)
	}
	return c.next.RoundTrip(r)
}

// A LogBuffer keeps what the provider logs; safe for concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Contains reports whether the provider ever logged s.
func (b *LogBuffer) Contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Contains(b.buf.Bytes(), []byte(s))
}

// Lines returns the lines the provider logged that contain s, the last max of them.
func (b *LogBuffer) Lines(s string, max int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// Len is how many bytes the provider logged.
func (b *LogBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// A RequestLog records "METHOD /path" of every request, for tests that count API calls.
type RequestLog struct {
	mu     sync.Mutex
	all    []string
	tokens []string
}

// TokenOf is the Keystone token the provider sent with its last request whose "METHOD /path"
// contains s: the token of one session, where other sessions send theirs at the same time.
func (l *RequestLog) TokenOf(s string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.all) - 1; i >= 0; i-- {
		if l.tokens[i] != "" && strings.Contains(l.all[i], s) {
			return l.tokens[i]
		}
	}
	return ""
}

func (l *RequestLog) add(s, token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, s)
	l.tokens = append(l.tokens, token)
}

// OfToken returns the requests recorded after the first n that carried the token: those of
// one session.
func (l *RequestLog) OfToken(n int, token string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for i := n; i < len(l.all); i++ {
		if l.tokens[i] == token {
			out = append(out, l.all[i])
		}
	}
	return out
}

// Since returns the requests recorded after the first n, and the new n.
func (l *RequestLog) Since(n int) ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all[n:]...), len(l.all)
}
