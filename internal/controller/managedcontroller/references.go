package managedcontroller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

const (
	errResolveReferences = "cannot resolve references"
	errCopyNotReferencer = "the resource's copy does not resolve references"
	errCopyNotObject     = "the resource's copy is not a Kubernetes object"
	errRecordReferences  = "cannot record the resolved references"
)

// referencer is a managed resource that resolves its own references (apis/.../references.go).
type referencer interface {
	ResolveReferences(ctx context.Context, c client.Reader) error
}

// fieldOwnerReferenceResolver owns the fields reference resolution writes.
const fieldOwnerReferenceResolver = "stackservices.io/reference-resolver"

// ReferenceResolver resolves a managed resource's references and records on the API server
// what resolution changed.
//
// It is crossplane-runtime's APISimpleReferenceResolver with two differences:
//   - The resource is left alone when resolution changes nothing, and when it fails. That
//     is every steady poll. Here a deep copy is resolved and compared by reflection
//     (apimachinery's semantic equality). crossplane-runtime compares with go-cmp, which at
//     scale was a quarter of everything the provider allocated.
//   - A change is recorded with a JSON merge patch of the changed fields, locked to the
//     resourceVersion it was computed from. crossplane-runtime records it with a
//     server-side apply of the changed fields alone. An apply drops every field its
//     manager applied before and leaves out now, so a reference with policy Always broke
//     when its target's external name changed: the apply carried the new ID, and the
//     reference went. The next apply restored the reference without the unchanged ID, and
//     the ID went. A composed SecurityGroupAttachment flipped more than a thousand times in
//     17 s after its group was made again. A merge patch removes only what resolution set
//     to nothing, and the lock keeps a patch computed from a stale copy from overwriting a
//     newer spec (the reconcile is requeued).
type ReferenceResolver struct {
	client client.Client
}

// NewReferenceResolver returns a ReferenceResolver that reads referenced resources and
// records resolved references with c.
func NewReferenceResolver(c client.Client) *ReferenceResolver {
	return &ReferenceResolver{client: c}
}

// ResolveReferences of mg, if it has any.
func (r *ReferenceResolver) ResolveReferences(ctx context.Context, mg resource.Managed) error {
	rr, ok := mg.(referencer)
	if !ok {
		// Checked before the copy: a kind without references pays nothing.
		return nil
	}
	// A generated DeepCopyObject returns the object's own type.
	resolved, ok := mg.DeepCopyObject().(referencer)
	if !ok {
		return errors.New(errCopyNotReferencer)
	}
	if err := resolved.ResolveReferences(ctx, r.client); err != nil {
		return errors.Wrap(err, errResolveReferences)
	}
	if equality.Semantic.DeepEqual(resolved, mg) {
		return nil
	}
	// Something resolved anew (a first reconcile, a reference with policy Always whose
	// target changed): resolve again on the resource and record the difference. The second
	// resolution reads the same cache, so it finds what the first did.
	original, ok := mg.DeepCopyObject().(client.Object)
	if !ok {
		return errors.New(errCopyNotObject)
	}
	if err := rr.ResolveReferences(ctx, r.client); err != nil {
		return errors.Wrap(err, errResolveReferences)
	}
	patch := client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})
	return errors.Wrap(r.client.Patch(ctx, mg, patch, client.FieldOwner(fieldOwnerReferenceResolver)), errRecordReferences)
}
