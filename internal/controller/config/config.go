// Package config reconciles ProviderConfigs and ClusterProviderConfigs: it counts the managed
// resources that use each one and keeps a config in use from being deleted.
package config

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpevent "github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/stackservices/provider-stackservices/apis/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
)

// Setup adds the controllers of both config kinds.
func Setup(mgr ctrl.Manager, o managedcontroller.Options) error {
	for _, k := range []struct {
		kind string
		obj  resource.ProviderConfig
	}{
		{v1alpha1.ProviderConfigKind, &v1alpha1.ProviderConfig{}},
		{v1alpha1.ClusterProviderConfigKind, &v1alpha1.ClusterProviderConfig{}},
	} {
		name := providerconfig.ControllerName(k.kind)
		rec := xpevent.NewAPIRecorder(mgr.GetEventRecorderFor(name)) //nolint:staticcheck // crossplane-runtime's recorder takes the core/v1 event recorder.
		r := providerconfig.NewReconciler(mgr, resource.ProviderConfigKinds{
			Config:    v1alpha1.SchemeGroupVersion.WithKind(k.kind),
			Usage:     v1alpha1.ProviderConfigUsageGroupVersionKind,
			UsageList: v1alpha1.ProviderConfigUsageListGroupVersionKind,
		},
			providerconfig.WithLogger(o.Logger.WithValues("controller", name)),
			providerconfig.WithRecorder(rec),
		)
		err := ctrl.NewControllerManagedBy(mgr).
			Named(name).
			WithOptions(o.ForControllerRuntime()).
			For(k.obj).
			Watches(&v1alpha1.ProviderConfigUsage{}, coalescing{&resource.EnqueueRequestForProviderConfig{Kind: k.kind}}).
			Complete(r)
		if err != nil {
			return err
		}
	}
	return nil
}

// SetupGated sets the controllers up once the config CRDs are established.
func SetupGated(mgr ctrl.Manager, o managedcontroller.Options) error {
	return managedcontroller.Gated(mgr, o, func() error { return Setup(mgr, o) },
		v1alpha1.ProviderConfigGroupVersionKind,
		v1alpha1.ClusterProviderConfigGroupVersionKind,
		v1alpha1.ProviderConfigUsageGroupVersionKind,
	)
}

// usageDelay is how long a config waits after a change of its usages before it counts them.
const usageDelay = time.Second

// coalescing enqueues the config a usage names usageDelay after the change, so that a burst
// of usages (a thousand resources created at once) is counted by a few reconciles, not one
// each: each reconcile lists every usage of its config, and one per usage made creating N
// resources cost N lists of up to N usages (a quarter of all the provider allocated while it
// created 1000 SecurityGroups). The count in status is up to usageDelay late.
type coalescing struct {
	handler handler.TypedEventHandler[client.Object, reconcile.Request]
}

func (c coalescing) Create(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	c.handler.Create(ctx, e, delayed{q})
}

func (c coalescing) Update(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	c.handler.Update(ctx, e, delayed{q})
}

func (c coalescing) Delete(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	c.handler.Delete(ctx, e, delayed{q})
}

func (c coalescing) Generic(ctx context.Context, e event.TypedGenericEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	c.handler.Generic(ctx, e, delayed{q})
}

// delayed is a queue whose Add waits usageDelay: requests for one config added meanwhile are
// one request.
type delayed struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
}

func (d delayed) Add(r reconcile.Request) { d.AddAfter(r, usageDelay) }
