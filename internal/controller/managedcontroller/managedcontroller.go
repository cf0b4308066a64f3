// Package managedcontroller holds what every managed resource controller of the provider
// shares: reconciler settings, metrics, rate limiting and safe-start gating.
package managedcontroller

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/machines"
	osmachines "github.com/stackservices/provider-stackservices/internal/machines/openstack"
	"github.com/stackservices/provider-stackservices/internal/transfers"
)

const errFmtStateMetrics = "cannot register the state metrics recorder of %s"

// Options configure every controller of the provider.
type Options struct {
	controller.Options

	// PollJitter spreads polls of many resources over time.
	PollJitter time.Duration

	// OpenStack connects managed resources to the cloud their ProviderConfig names.
	OpenStack *openstack.Connector

	// LocalMachines runs etcd members as processes on the provider's host; nil when the
	// provider was started without --enable-local-machines.
	LocalMachines machines.Machines

	// EtcdProviderCIDRs are the addresses the provider reaches etcd members from; the
	// members' security groups let them in (OpenStack machines need at least one).
	EtcdProviderCIDRs []string

	// EtcdReleaseChecksums are the SHA-256 sums of the etcd release tarballs that servers
	// may download (--etcd-release-checksums); nil: none, and an EtcdCluster that names an
	// etcdReleaseURL is refused.
	EtcdReleaseChecksums osmachines.Checksums

	// WrapTransport, when set, wraps the HTTP transport of the S3 clients: the provider counts
	// its requests with it (httpmetrics), tests theirs. (OpenStack sessions take theirs from
	// the session cache's options.)
	WrapTransport func(http.RoundTripper) http.RoundTripper

	// Transfers bounds the snapshots reconciles stream, over every controller that does (see
	// ReconcileTransfers).
	Transfers *transfers.Limiter
}

// ReconcileTransfers is the limiter of the snapshots reconciles stream: o.Transfers, shared
// by the controllers, or one of transfers.InReconcile slots of their own when it is unset.
func (o Options) ReconcileTransfers() *transfers.Limiter {
	if o.Transfers != nil {
		return o.Transfers
	}
	return transfers.New(transfers.InReconcile)
}

// Kind describes the managed resource a controller reconciles.
type Kind struct {
	GroupVersionKind schema.GroupVersionKind
	Object           resource.Managed
	List             resource.ManagedList
}

// Name is the controller's name, as crossplane-runtime spells it.
func (k Kind) Name() string {
	return managed.ControllerName(k.GroupVersionKind.GroupKind().String())
}

// Recorder returns the event recorder of the kind's controller, for external clients that
// report what they changed.
func Recorder(mgr ctrl.Manager, k Kind) event.Recorder {
	return event.NewAPIRecorder(mgr.GetEventRecorderFor(k.Name())) //nolint:staticcheck // crossplane-runtime's recorder takes the core/v1 event recorder.
}

// PollHook is the poll interval hook of every controller: the poll interval with jitter, so
// that resources are not all checked at once. A kind that needs another interval while it
// converges passes its own managed.WithPollIntervalHook, built on this one.
func PollHook(jitter time.Duration) managed.PollIntervalHook {
	return func(_ resource.Managed, pollInterval time.Duration) time.Duration {
		if jitter <= 0 {
			return pollInterval
		}
		return pollInterval + time.Duration((rand.Float64()-0.5)*2*float64(jitter)) //nolint:gosec // Jitter needs no secure randomness.
	}
}

// A Watch makes events of other objects (say, Nodes) reconcile the managed resources the
// handler names, without waiting for the next poll; or, with Source, events from outside the
// API server (drift a backend listing found).
type Watch struct {
	Object  client.Object
	Handler handler.EventHandler
	Source  source.Source
}

// Drift is how a kind whose external client finds drift outside its own reconcile (in a
// session's listing) asks for a resource to be reconciled at once: Notify returns the callback
// for one resource, and Watch is the source the controller watches.
type Drift struct {
	events chan ctrlevent.GenericEvent
}

// driftQueue is how many drifted resources may wait for the controller to take them; beyond
// it a change is left to the resource's own poll.
const driftQueue = 1024

// NewDrift returns a Drift for one controller.
func NewDrift() *Drift { return &Drift{events: make(chan ctrlevent.GenericEvent, driftQueue)} }

// Watch is the Watch that reconciles the resources Notify's callbacks name.
func (d *Drift) Watch() Watch {
	return Watch{Source: source.Channel(d.events, &handler.EnqueueRequestForObject{})}
}

// For names obj to a listing's watch (by its UID) and returns the callback that asks for obj
// (by its namespace and name) to be reconciled: safe to call from any goroutine, it never
// blocks. A nil Drift gives no callback.
func (d *Drift) For(obj client.Object) (watcher string, notify func()) {
	watcher = string(obj.GetUID())
	if d == nil {
		return watcher, nil
	}
	key := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
	return watcher, func() {
		select {
		case d.events <- ctrlevent.GenericEvent{Object: key}:
		default:
		}
	}
}

// Setup registers a managed resource controller with the settings the provider's kinds share
// plus the kind's own options (its external connector above all).
func Setup(mgr ctrl.Manager, o Options, k Kind, opts ...managed.ReconcilerOption) error {
	return SetupWithWatches(mgr, o, k, nil, opts...)
}

// SetupWithWatches is Setup for kinds that also react to other objects.
func SetupWithWatches(mgr ctrl.Manager, o Options, k Kind, watches []Watch, opts ...managed.ReconcilerOption) error {
	name := k.Name()
	all := []managed.ReconcilerOption{
		managed.WithLogger(o.Logger.WithValues("controller", name)),
		managed.WithRecorder(Recorder(mgr, k)),
		managed.WithPollInterval(o.PollInterval),
		managed.WithPollIntervalHook(PollHook(o.PollJitter)),
		managed.WithManagementPolicies(),
		// A kind without references costs nothing here.
		managed.WithReferenceResolver(NewReferenceResolver(mgr.GetClient())),
	}
	if o.Features != nil && o.Features.Enabled(feature.EnableAlphaChangeLogs) && o.ChangeLogOptions != nil {
		all = append(all, managed.WithChangeLogger(o.ChangeLogOptions.ChangeLogger))
	}
	if o.MetricOptions != nil {
		all = append(all, managed.WithMetricRecorder(o.MetricOptions.MRMetrics))
		if o.MetricOptions.MRStateMetrics != nil {
			sm := statemetrics.NewMRStateRecorder(noCopyLister{mgr.GetClient()}, o.Logger, o.MetricOptions.MRStateMetrics, k.List, o.MetricOptions.PollStateMetricInterval)
			if err := mgr.Add(sm); err != nil {
				return errors.Wrapf(err, errFmtStateMetrics, name)
			}
		}
	}
	// A steady-state poll then writes nothing to the API server (see unchangedStatusSkipper).
	m := skippingManager{Manager: mgr, client: newUnchangedStatusSkipper(mgr.GetClient())}
	r := managed.NewReconciler(m, resource.ManagedKind(k.GroupVersionKind), append(all, opts...)...)

	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(o.ForControllerRuntime()).
		// Status updates of the resource itself must not trigger reconciles; events of
		// watched objects are the handlers' to filter.
		For(k.Object, builder.WithPredicates(resource.DesiredStateChanged()))
	for _, w := range watches {
		if w.Source != nil {
			b = b.WatchesRawSource(w.Source)
			continue
		}
		b = b.Watches(w.Object, w.Handler)
	}
	return b.Complete(ratelimiter.NewReconciler(name, errors.WithSilentRequeueOnConflict(r), o.GlobalRateLimiter))
}

// Gated runs setup once the CRDs of the supplied kinds are established (safe-start: Crossplane
// may install the provider with some of its resources inactive), or at once without a gate.
func Gated(mgr ctrl.Manager, o Options, setup func() error, gvks ...schema.GroupVersionKind) error {
	if o.Gate == nil {
		return setup()
	}
	o.Gate.Register(func() {
		if err := setup(); err != nil {
			mgr.GetLogger().Error(err, "cannot set up controller", "gvks", gvks)
		}
	}, gvks...)
	return nil
}

// noCopyLister lists from the cache without deep copies. The state metrics recorder lists
// every managed resource of its kind every few seconds and only reads their conditions: with
// deep copies, each of those lists was a copy of every resource, garbage at once.
type noCopyLister struct{ client.Client }

func (c noCopyLister) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Client.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...)
}
