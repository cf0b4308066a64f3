package managedcontroller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

const (
	errResolveReferences = "cannot resolve references"
	errCopyNotReferencer = "the resource's copy does not resolve references"
)

// referencer is a managed resource that resolves its own references (apis/.../references.go).
type referencer interface {
	ResolveReferences(ctx context.Context, c client.Reader) error
}

// ReferenceResolver resolves a managed resource's references as crossplane-runtime's
// APISimpleReferenceResolver does, and calls that resolver when resolution changes the
// resource. What it saves is the price of a reconcile whose references are already resolved:
// every steady poll. crossplane-runtime's resolver compares the resource before and after with
// go-cmp, which at scale was a quarter of everything the provider allocated; here a deep copy
// is resolved and compared by reflection (apimachinery's semantic equality), and the resource
// itself is left alone when they match, or when resolution fails.
type ReferenceResolver struct {
	reader  client.Reader
	patcher managed.ReferenceResolver
}

// NewReferenceResolver returns a ReferenceResolver that reads referenced resources with c and
// records resolved references on the resource with crossplane-runtime's resolver (a server-side
// apply owned by its field manager, as before).
func NewReferenceResolver(c client.Client) *ReferenceResolver {
	return &ReferenceResolver{reader: c, patcher: managed.NewAPISimpleReferenceResolver(c)}
}

// ResolveReferences of mg, if it has any.
func (r *ReferenceResolver) ResolveReferences(ctx context.Context, mg resource.Managed) error {
	if _, ok := mg.(referencer); !ok {
		// Checked before the copy: a kind without references pays nothing.
		return nil
	}
	// A generated DeepCopyObject returns the object's own type.
	resolved, ok := mg.DeepCopyObject().(referencer)
	if !ok {
		return errors.New(errCopyNotReferencer)
	}
	if err := resolved.ResolveReferences(ctx, r.reader); err != nil {
		return errors.Wrap(err, errResolveReferences)
	}
	if equality.Semantic.DeepEqual(resolved, mg) {
		return nil
	}
	// Something resolved anew (a first reconcile, a reference with policy Always whose
	// target changed): resolve again on the resource and record it. The second resolution
	// reads the same cache; what it finds is what is recorded.
	return r.patcher.ResolveReferences(ctx, mg)
}
