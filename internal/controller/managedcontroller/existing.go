package managedcontroller

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// ErrNotCreated is the condition of a resource whose external resource does not exist while
// its management policies leave out Create.
const ErrNotCreated = "the external resource does not exist, and spec.managementPolicies leave out Create, so the provider " +
	"creates nothing: add Create to the policies, or create the resource outside the provider and name it in the " +
	"crossplane.io/external-name annotation"

// WithExternalConnector is managed.WithTypedExternalConnector with Update kept from acting on
// an external resource that does not exist. crossplane-runtime calls Update when Observe
// found nothing and the management policies include Update but not Create
// (crossplane/crossplane-runtime#1129); an Update would then make what Create would have
// (rules, attachments, access keys) against the policies, or fail with an error about
// something else. Every kind uses it, so that none has to remember.
func WithExternalConnector[T resource.Managed](c managed.TypedExternalConnector[T]) managed.ReconcilerOption {
	return managed.WithTypedExternalConnector[T](existingOnlyConnector[T]{c})
}

type existingOnlyConnector[T resource.Managed] struct {
	managed.TypedExternalConnector[T]
}

func (c existingOnlyConnector[T]) Connect(ctx context.Context, mg T) (managed.TypedExternalClient[T], error) {
	ext, err := c.TypedExternalConnector.Connect(ctx, mg)
	if err != nil {
		return nil, err
	}
	return &existingOnlyClient[T]{TypedExternalClient: ext}, nil
}

// existingOnlyClient remembers what this reconcile's Observe found (a client lives for one
// reconcile).
type existingOnlyClient[T resource.Managed] struct {
	managed.TypedExternalClient[T]
	absent bool
}

func (c *existingOnlyClient[T]) Observe(ctx context.Context, mg T) (managed.ExternalObservation, error) {
	o, err := c.TypedExternalClient.Observe(ctx, mg)
	c.absent = err == nil && !o.ResourceExists
	return o, err
}

func (c *existingOnlyClient[T]) Update(ctx context.Context, mg T) (managed.ExternalUpdate, error) {
	if c.absent {
		return managed.ExternalUpdate{}, errors.New(ErrNotCreated)
	}
	return c.TypedExternalClient.Update(ctx, mg)
}
