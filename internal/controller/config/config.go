// Package config reconciles ProviderConfigs and ClusterProviderConfigs: it counts the managed
// resources that use each one and keeps a config in use from being deleted.
package config

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
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
		//lint:ignore SA1019 crossplane-runtime's recorder takes the core/v1 event recorder.
		rec := event.NewAPIRecorder(mgr.GetEventRecorderFor(name))
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
			Watches(&v1alpha1.ProviderConfigUsage{}, &resource.EnqueueRequestForProviderConfig{Kind: k.kind}).
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
