package contract

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
)

const (
	// keysFinalizerName holds a Contract's connection Secret until the Contract is deleted.
	keysFinalizerName = "objectstorage.m.stackservices.io/contract-keys"

	errGetSecret     = "cannot get the Contract's connection Secret"
	errHoldSecret    = "cannot hold the Contract's connection Secret until the Contract is deleted"
	errReleaseSecret = "cannot release the Contract's connection Secret"
)

// keysFinalizer is a Contract's finalizer: crossplane-runtime's on the Contract, plus one on
// the connection Secret the Contract controls. A foreground deletion (kubectl
// --cascade=foreground, Argo CD, a composite deleted in the foreground) deletes an object's
// dependents before the object, so the Secret would go while the Contract still waits for
// the Buckets that read their keys from it (see users): they could then never delete their
// buckets. Held, the Secret stays readable until the Contract's deletion is done.
//
// Only the Secret spec.writeConnectionSecretToRef names now is held: one named before a
// change of the reference is left alone, as crossplane-runtime leaves it.
type keysFinalizer struct {
	resource.Finalizer
	kube client.Client
}

func newKeysFinalizer(kube client.Client) keysFinalizer {
	return keysFinalizer{Finalizer: resource.NewAPIFinalizer(kube, managed.FinalizerName), kube: kube}
}

// AddFinalizer is called on every reconcile of a Contract that is not being deleted.
func (f keysFinalizer) AddFinalizer(ctx context.Context, obj resource.Object) error {
	if err := f.Finalizer.AddFinalizer(ctx, obj); err != nil {
		return err
	}
	s, err := f.secret(ctx, obj)
	if err != nil || s == nil || meta.FinalizerExists(s, keysFinalizerName) || meta.WasDeleted(s) {
		return err
	}
	meta.AddFinalizer(s, keysFinalizerName)
	return errors.Wrap(f.kube.Update(ctx, s), errHoldSecret)
}

// RemoveFinalizer is called once the Contract's keys are revoked (or orphaned).
func (f keysFinalizer) RemoveFinalizer(ctx context.Context, obj resource.Object) error {
	s, err := f.secret(ctx, obj)
	if err != nil {
		return err
	}
	if s != nil && meta.FinalizerExists(s, keysFinalizerName) {
		meta.RemoveFinalizer(s, keysFinalizerName)
		if err := f.kube.Update(ctx, s); client.IgnoreNotFound(err) != nil {
			return errors.Wrap(err, errReleaseSecret)
		}
	}
	return f.Finalizer.RemoveFinalizer(ctx, obj)
}

// secret is the Contract's connection Secret, or nil when there is none or it is not the
// Contract's (a Secret another object controls is never touched).
func (f keysFinalizer) secret(ctx context.Context, obj resource.Object) (*corev1.Secret, error) {
	cr, ok := obj.(*v1alpha1.Contract)
	if !ok || cr.GetWriteConnectionSecretToReference() == nil {
		return nil, nil
	}
	s := &corev1.Secret{}
	err := f.kube.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: cr.GetWriteConnectionSecretToReference().Name}, s)
	if kerrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, errors.Wrap(err, errGetSecret)
	}
	if !metav1.IsControlledBy(s, cr) {
		return nil, nil
	}
	return s, nil
}
