// Command provider runs the provider-stackservices controllers.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	changelogsv1alpha1 "github.com/crossplane/crossplane-runtime/v2/apis/changelogs/proto/v1alpha1"
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/stackservices/provider-stackservices/apis"
	"github.com/stackservices/provider-stackservices/apis/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/httpmetrics"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	providercontroller "github.com/stackservices/provider-stackservices/internal/controller"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
	"github.com/stackservices/provider-stackservices/internal/machines/local"
	osmachines "github.com/stackservices/provider-stackservices/internal/machines/openstack"
	"github.com/stackservices/provider-stackservices/internal/transfers"
	"github.com/stackservices/provider-stackservices/internal/version"
)

func main() {
	var (
		app            = kingpin.New(filepath.Base(os.Args[0]), "Crossplane provider for OpenStack security groups, object storage and etcd clusters.").DefaultEnvars()
		debug          = app.Flag("debug", "Run with debug logging.").Short('d').Bool()
		leaderElection = app.Flag("leader-election", "Use leader election, so that only one replica reconciles.").Short('l').Default("false").Envar("LEADER_ELECTION").Bool()

		syncInterval     = app.Flag("sync", "How often every resource is re-checked even without events.").Short('s').Default("1h").Duration()
		pollInterval     = app.Flag("poll", "How often each resource is checked for drift in the external system.").Default("1m").Duration()
		pollJitter       = app.Flag("poll-jitter", "Random jitter added to each poll, so that resources are not all checked at once.").Default("5s").Duration()
		pollStateMetric  = app.Flag("poll-state-metric", "How often the managed resource state metrics are recorded.").Default("5s").Duration()
		maxReconcileRate = app.Flag("max-reconcile-rate", "The global maximum number of reconciles per second, and of concurrent reconciles per controller unless --max-concurrent-reconciles says.").Default("100").Int()
		maxConcurrent    = app.Flag("max-concurrent-reconciles", "How many reconciles of one controller may run at once (each may have backend calls in flight); 0: --max-reconcile-rate.").Default("0").Int()

		metricsAddr = app.Flag("metrics-bind-address", "Address the Prometheus metrics endpoint listens on; 0 disables it.").Default(":8080").String()
		healthAddr  = app.Flag("health-probe-bind-address", "Address the /healthz and /readyz probes listen on; 0 disables them.").Default(":8081").String()
		pprofAddr   = app.Flag("pprof-bind-address", "Address Go's /debug/pprof profiles are served on, for finding where memory and CPU go; empty (the default) disables them.").Default("").String()

		enableChangeLogs     = app.Flag("enable-changelogs", "Record every change made to external resources in Crossplane change logs.").Default("false").Envar("ENABLE_CHANGE_LOGS").Bool()
		changelogsSocketPath = app.Flag("changelogs-socket-path", "Socket of the change logs sidecar.").Default("/var/run/changelogs/changelogs.sock").Envar("CHANGELOGS_SOCKET_PATH").String()
		gracefulShutdown     = app.Flag("graceful-shutdown-timeout", "How long in-flight reconciles may take to finish on shutdown.").Default("30s").Duration()

		enableLocalMachines = app.Flag("enable-local-machines", "Run the members of EtcdClusters with machines.type Local as processes on the provider's own host (development and tests only).").Default("false").Bool()
		localMachinesDir    = app.Flag("local-machines-dir", "Where local etcd members keep their data, certificates and logs.").Default("/var/lib/provider-stackservices/machines").String()
		etcdBinariesDir     = app.Flag("etcd-binaries-dir", "Directory with one folder per etcd version (v3.6.16/etcd...), for local machines.").Default("/usr/local/lib/provider-stackservices/etcd").String()
		etcdChecksums       = app.Flag("etcd-release-checksums", "A file of SHA-256 sums of etcd release tarballs (sha256sum's format, as etcd's SHA256SUMS): the releases OpenStack servers may download from the etcdReleaseURL an EtcdCluster names. Read at each use. Without it, etcdReleaseURL is refused.").ExistingFile()
		etcdProviderCIDRs   = app.Flag("etcd-provider-cidr", "Where the provider reaches etcd members on OpenStack servers from (its pods' or nodes' addresses, as the members' network sees them); repeat for several. The members' security group lets these reach the client port. Without it, EtcdClusters on OpenStack machines are refused.").Strings()
	)
	kingpin.MustParse(app.Parse(os.Args[1:]))

	zl := zap.New(zap.UseDevMode(*debug))
	log := logging.NewLogrLogger(zl.WithName("provider-stackservices"))
	if *debug {
		// controller-runtime is very chatty; give it a real logger only in debug mode.
		ctrl.SetLogger(zl)
	} else {
		ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	}
	log.Info("Starting", "version", version.Version, "poll", *pollInterval, "max-reconcile-rate", *maxReconcileRate)

	cfg, err := ctrl.GetConfig()
	kingpin.FatalIfError(err, "Cannot get API server rest config")

	// The scheme is complete before the manager exists: its cache options name CRDs.
	scheme := runtime.NewScheme()
	kingpin.FatalIfError(clientgoscheme.AddToScheme(scheme), "Cannot add Kubernetes APIs to scheme")
	kingpin.FatalIfError(apiextensionsv1.AddToScheme(scheme), "Cannot add CRD API to scheme")
	kingpin.FatalIfError(apis.AddToScheme(scheme), "Cannot add provider APIs to scheme")

	mgr, err := ctrl.NewManager(ratelimiter.LimitRESTConfig(cfg, *maxReconcileRate), ctrl.Options{
		Scheme: scheme,
		Cache: cache.Options{
			SyncPeriod: syncInterval,
			// Nothing reads managedFields, and they are often larger than the rest of a
			// managed resource: kept out of the cache, they cost no memory per resource.
			// (Updates without them leave the API server's as they are.)
			DefaultTransform: cache.TransformStripManagedFields(),
			// CRD schemas are large and the gate only needs their conditions.
			ByObject: map[client.Object]cache.ByObject{
				&apiextensionsv1.CustomResourceDefinition{}: {Transform: customresourcesgate.TransformStripCRDSchema},
			},
		},
		Metrics:                    metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:     *healthAddr,
		PprofBindAddress:           *pprofAddr,
		LeaderElection:             *leaderElection,
		LeaderElectionID:           "crossplane-leader-election-provider-stackservices",
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		// Longer than the defaults: renewals were seen to miss under heavy reconcile load.
		LeaseDuration:           ptr.To(60 * time.Second),
		RenewDeadline:           ptr.To(50 * time.Second),
		GracefulShutdownTimeout: gracefulShutdown,
	})
	kingpin.FatalIfError(err, "Cannot create controller manager")
	kingpin.FatalIfError(mgr.AddHealthzCheck("healthz", healthz.Ping), "Cannot add health check")
	kingpin.FatalIfError(mgr.AddReadyzCheck("readyz", healthz.Ping), "Cannot add ready check")

	mrMetrics := managed.NewMRMetricRecorder()
	stateMetrics := statemetrics.NewMRStateMetrics()
	metrics.Registry.MustRegister(mrMetrics)
	metrics.Registry.MustRegister(stateMetrics)
	// Every request to OpenStack and S3, by operation: what the provider costs the cloud.
	backendMetrics := httpmetrics.New(metrics.Registry)

	o := managedcontroller.Options{
		Options: controller.Options{
			Logger:                  log,
			MaxConcurrentReconciles: concurrentReconciles(*maxConcurrent, *maxReconcileRate),
			PollInterval:            *pollInterval,
			GlobalRateLimiter:       ratelimiter.NewGlobal(*maxReconcileRate),
			Features:                &feature.Flags{},
			MetricOptions: &controller.MetricOptions{
				PollStateMetricInterval: *pollStateMetric,
				MRMetrics:               mrMetrics,
				MRStateMetrics:          stateMetrics,
			},
			// safe-start: controllers start when Crossplane activates their resources.
			Gate: new(gate.Gate[schema.GroupVersionKind]),
		},
		PollJitter:        *pollJitter,
		Transfers:         transfers.New(transfers.InReconcile),
		WrapTransport:     backendMetrics.Wrap(httpmetrics.S3),
		EtcdProviderCIDRs: *etcdProviderCIDRs,
		OpenStack: openstack.NewConnector(mgr.GetClient(),
			resource.NewProviderConfigUsageTracker(mgr.GetClient(), &v1alpha1.ProviderConfigUsage{}),
			openstack.NewSessionCache(openstack.SessionOptions{
				UserAgent:     "provider-stackservices/" + version.Version,
				WrapTransport: backendMetrics.Wrap(httpmetrics.OpenStack),
			})),
	}
	o.Features.Enable(feature.EnableBetaManagementPolicies)
	if *etcdChecksums != "" {
		o.EtcdReleaseChecksums = osmachines.ChecksumsFile(*etcdChecksums)
	}

	if *enableLocalMachines {
		lm, err := local.New(local.Options{Dir: *localMachinesDir, BinariesDir: *etcdBinariesDir, Log: log})
		kingpin.FatalIfError(err, "Cannot set up local machines in %s", *localMachinesDir)
		o.LocalMachines = lm
		// Members stop with the host (or `make dev-down`); like a machine's init system
		// after a reboot, start them again on their data.
		// One that cannot start does not keep the provider from running: its cluster reports
		// it unhealthy and replaces it.
		n, err := lm.Resume(context.Background())
		log.Info("Restarted local etcd members", "count", n, "error", err)
		log.Info("Local machines enabled: etcd members run on this host", "dir", *localMachinesDir, "etcd-binaries", *etcdBinariesDir)
	}

	if *enableChangeLogs {
		o.Features.Enable(feature.EnableAlphaChangeLogs)
		conn, err := grpc.NewClient("unix://"+*changelogsSocketPath, grpc.WithTransportCredentials(insecure.NewCredentials()))
		kingpin.FatalIfError(err, "Cannot connect to the change logs socket %s", *changelogsSocketPath)
		o.ChangeLogOptions = &controller.ChangeLogOptions{
			ChangeLogger: managed.NewGRPCChangeLogger(changelogsv1alpha1.NewChangeLogServiceClient(conn),
				managed.WithProviderVersion(fmt.Sprintf("provider-stackservices:%s", version.Version))),
		}
	}

	kingpin.FatalIfError(customresourcesgate.Setup(mgr, o.Options), "Cannot set up the CRD gate")
	kingpin.FatalIfError(providercontroller.SetupGated(mgr, o), "Cannot set up controllers")
	// SetupSignalHandler cancels on SIGTERM/SIGINT; the manager then drains in-flight
	// reconciles for up to the graceful shutdown timeout.
	kingpin.FatalIfError(mgr.Start(ctrl.SetupSignalHandler()), "Cannot start controller manager")
}

// concurrentReconciles is how many reconciles of one controller run at once: as many as the
// reconcile rate, as crossplane-runtime's providers have it, unless set apart. Apart, a
// platform team bounds what the provider asks of a backend at once (Neutron answers 500 to
// many concurrent writes) without capping its reconciles a second, which the cheap ones (a
// poll served from a listing) need.
func concurrentReconciles(set, rate int) int {
	if set > 0 {
		return set
	}
	return rate
}
