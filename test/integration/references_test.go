//go:build integration

package integration

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// TestAReferenceFollowsItsTargetMadeAgain: an attachment selects its group at every
// reconcile (policy Always, as the NodeFirewall composition asks). When the group gets a new
// ID (it was deleted by hand and made again), the attachment's spec takes the new ID and
// keeps its reference, and then stays as it is.
//
// crossplane-runtime's resolver recorded this with a server-side apply of the changed field
// alone. The apply dropped the reference the same manager had applied before. The next
// reconcile put the reference back and dropped the ID. The spec changed for ever, and each
// change was another reconcile.
//
// Both resources observe only, and their IDs are made up: the references are resolved by
// the provider's controllers all the same, and nothing is made in Neutron.
func TestAReferenceFollowsItsTargetMadeAgain(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	observeOnly := xpv2.ManagementPolicies{xpv2.ManagementActionObserve}

	sg := &v1alpha1.SecurityGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	sg.Spec.ManagementPolicies = observeOnly
	meta.SetExternalName(sg, "0b0e2b9e-1c1d-4c55-9d0e-000000000001")
	if err := env.Kube.Create(ctx, sg); err != nil {
		t.Fatal(err)
	}
	a := &v1alpha1.SecurityGroupAttachment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-nodes"}}
	a.Spec.ManagementPolicies = observeOnly
	a.Spec.ForProvider.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"role": "web"}}
	a.Spec.ForProvider.SecurityGroupSelector = &xpv2.Selector{Policy: &xpv2.Policy{Resolve: ptr.To(xpv2.ResolvePolicyAlways)}}
	if err := env.Kube.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(a)
	resolvedTo := func(id string) error {
		got := &v1alpha1.SecurityGroupAttachment{}
		if err := env.Kube.Get(ctx, key, got); err != nil {
			return err
		}
		p := got.Spec.ForProvider
		if ptr.Deref(p.SecurityGroupID, "") != id || p.SecurityGroupRef == nil || p.SecurityGroupRef.Name != "web" {
			return fmt.Errorf("securityGroupID %v, securityGroupRef %v, want %s and web", ptr.Deref(p.SecurityGroupID, ""), p.SecurityGroupRef, id)
		}
		return nil
	}
	harness.Eventually(t, waitReady, "the attachment resolved to the group", func() error {
		return resolvedTo("0b0e2b9e-1c1d-4c55-9d0e-000000000001")
	})

	// The group is made again: a new ID. A new annotation on the attachment reconciles it
	// now rather than after its backoff.
	env.Mutate(t, client.ObjectKeyFromObject(sg), sg, func() { meta.SetExternalName(sg, "0b0e2b9e-1c1d-4c55-9d0e-000000000002") })
	env.Mutate(t, key, a, func() { meta.AddAnnotations(a, map[string]string{"test/nudge": "1"}) })
	harness.Eventually(t, waitReady, "the attachment resolved to the group made again", func() error {
		return resolvedTo("0b0e2b9e-1c1d-4c55-9d0e-000000000002")
	})

	// And it stays so: a spec that keeps changing would show in its generation.
	before := &v1alpha1.SecurityGroupAttachment{}
	if err := env.Kube.Get(ctx, key, before); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * poll)
	if err := resolvedTo("0b0e2b9e-1c1d-4c55-9d0e-000000000002"); err != nil {
		t.Errorf("%d s later: %v", 5*poll/time.Second, err)
	}
	after := &v1alpha1.SecurityGroupAttachment{}
	if err := env.Kube.Get(ctx, key, after); err != nil {
		t.Fatal(err)
	}
	if after.GetGeneration() != before.GetGeneration() {
		t.Errorf("the attachment's spec changed %d times in %s with nothing to change it", after.GetGeneration()-before.GetGeneration(), 5*poll)
	}
}
