package v1alpha1

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reference"

	"github.com/stackservices/provider-stackservices/apis/common"
)

// ResolveReferences of this Bucket: its Contract, in its namespace. Written by hand, not by
// angryjet: the generated resolver takes a namespaced reference, which may name another
// namespace.
func (mg *Bucket) ResolveReferences(ctx context.Context, c client.Reader) error {
	p := &mg.Spec.ForProvider
	rsp, err := common.Resolve(ctx, c, mg, common.LocalReference{
		Field:     "spec.forProvider.contractRef",
		Current:   p.ContractName,
		Reference: p.ContractRef,
		Selector:  p.ContractSelector,
		Extract:   ContractName(),
		To:        reference.To{Managed: &Contract{}, List: &ContractList{}},
	})
	if err != nil {
		return err
	}
	p.ContractName, p.ContractRef = rsp.Value, rsp.Reference
	return nil
}
