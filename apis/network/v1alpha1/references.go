package v1alpha1

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reference"

	"github.com/stackservices/provider-stackservices/apis/common"
)

// Written by hand, not by angryjet: the generated resolvers take namespaced references, which
// may name another namespace, and name the field of a failed rule as "Rules[i3]".

// ResolveReferences of this SecurityGroup: the remote groups of its rules, in its namespace.
// A rule whose remoteGroupRef names this SecurityGroup itself is filled in from its own external
// name (empty until the group exists; the controller fills it in when it creates the rules).
func (mg *SecurityGroup) ResolveReferences(ctx context.Context, c client.Reader) error {
	for i := range mg.Spec.ForProvider.Rules {
		r := &mg.Spec.ForProvider.Rules[i]
		if r.RefersToItsOwnGroup(mg) {
			if id := meta.GetExternalName(mg); id != "" {
				r.RemoteGroupID = &id
			}
			continue
		}
		rsp, err := common.Resolve(ctx, c, mg, common.LocalReference{
			Field:     fmt.Sprintf("spec.forProvider.rules[%d].remoteGroupRef", i),
			Current:   r.RemoteGroupID,
			Reference: r.RemoteGroupRef,
			Selector:  r.RemoteGroupSelector,
			Extract:   reference.ExternalName(),
			To:        reference.To{Managed: &SecurityGroup{}, List: &SecurityGroupList{}},
		})
		if err != nil {
			return err
		}
		r.RemoteGroupID, r.RemoteGroupRef = rsp.Value, rsp.Reference
	}
	return nil
}

// RefersToItsOwnGroup reports whether the rule's remote group is the group the rule is in.
func (r SecurityGroupRule) RefersToItsOwnGroup(sg *SecurityGroup) bool {
	return r.RemoteGroupRef != nil && r.RemoteGroupRef.Name == sg.GetName()
}

// HasRemoteGroup reports whether the rule asks for a remote group, by ID, reference or
// selector: such a rule matches the group's members only, never "any address".
func (r SecurityGroupRule) HasRemoteGroup() bool {
	return r.RemoteGroupID != nil || r.RemoteGroupRef != nil || r.RemoteGroupSelector != nil
}

// ResolveReferences of this SecurityGroupAttachment: its security group, in its namespace.
func (mg *SecurityGroupAttachment) ResolveReferences(ctx context.Context, c client.Reader) error {
	p := &mg.Spec.ForProvider
	rsp, err := common.Resolve(ctx, c, mg, common.LocalReference{
		Field:     "spec.forProvider.securityGroupRef",
		Current:   p.SecurityGroupID,
		Reference: p.SecurityGroupRef,
		Selector:  p.SecurityGroupSelector,
		Extract:   reference.ExternalName(),
		To:        reference.To{Managed: &SecurityGroup{}, List: &SecurityGroupList{}},
	})
	if err != nil {
		return err
	}
	p.SecurityGroupID, p.SecurityGroupRef = rsp.Value, rsp.Reference
	return nil
}
