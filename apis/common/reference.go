// Package common holds what the provider's API groups share: references that stay in the
// referencing resource's namespace, and duration fields that always decode.
package common

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reference"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// A LocalReference is a reference (name and policy, no namespace) to a managed resource in the
// namespace of the resource that holds it, and the field it fills in.
//
// The provider's API uses xpv2.Reference and xpv2.Selector rather than their Namespaced
// variants: those carry a namespace, and crossplane-runtime resolves them there, so a tenant
// could point a rule or a bucket at another namespace's resources. Without the field, the API
// cannot express that; Resolve pins the namespace besides.
type LocalReference struct {
	// Field is the path of the field the reference fills in, for error messages
	// (spec.forProvider.rules[2].remoteGroupID).
	Field string
	// Current is the field's value: a reference is resolved only when it is unset, or when
	// the reference's policy says Always.
	Current *string
	// Reference and Selector are the resource's reference and selector fields.
	Reference *xpv2.Reference
	Selector  *xpv2.Selector
	// Extract reads the value from the referenced resource.
	Extract reference.ExtractValueFn
	// To is the kind referenced.
	To reference.To
}

// Resolved is what Resolve found: the value for the field and the reference to keep.
type Resolved struct {
	Value     *string
	Reference *xpv2.Reference
}

// Resolve resolves r among the managed resources in from's namespace only.
func Resolve(ctx context.Context, c client.Reader, from resource.Managed, r LocalReference) (Resolved, error) {
	req := reference.NamespacedResolutionRequest{
		CurrentValue: reference.FromPtrValue(r.Current),
		Extract:      r.Extract,
		Namespace:    from.GetNamespace(),
		To:           r.To,
	}
	if r.Reference != nil {
		req.Reference = &xpv2.NamespacedReference{Name: r.Reference.Name, Namespace: from.GetNamespace(), Policy: r.Reference.Policy}
	}
	if r.Selector != nil {
		req.Selector = &xpv2.NamespacedSelector{MatchLabels: r.Selector.MatchLabels, MatchControllerRef: r.Selector.MatchControllerRef, Policy: r.Selector.Policy, Namespace: from.GetNamespace()}
	}
	rsp, err := reference.NewAPINamespacedResolver(c, from).Resolve(ctx, req)
	if err != nil {
		return Resolved{Value: r.Current, Reference: r.Reference}, errors.Wrapf(err, "cannot resolve %s", r.Field)
	}
	out := Resolved{Value: reference.ToPtrValue(rsp.ResolvedValue), Reference: r.Reference}
	if rsp.ResolvedReference != nil {
		// As crossplane-runtime does, a reference a selector found carries no policy.
		out.Reference = &xpv2.Reference{Name: rsp.ResolvedReference.Name}
		if r.Reference != nil {
			out.Reference.Policy = r.Reference.Policy
		}
	}
	return out, nil
}
