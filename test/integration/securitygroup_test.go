//go:build integration

package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	apisv1alpha1 "github.com/stackservices/provider-stackservices/apis/v1alpha1"
	"github.com/stackservices/provider-stackservices/test/harness"
)

const waitReady = 60 * time.Second

func newNamespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(name) > 50 {
		name = name[:50]
	}
	name = uniqueName(strings.Trim(name, "-"))
	if err := env.NewNamespace(harness.Ctx(t), name); err != nil {
		t.Fatalf("cannot create namespace %s: %v", name, err)
	}
	return name
}

// uniqueName is prefix with a suffix that differs between runs and -count iterations: this
// apiserver has no namespace controller, so an earlier iteration's namespace is never gone.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%100000)
}

func rule(dir, et, proto string, min, max int32, prefix string) v1alpha1.SecurityGroupRule {
	r := v1alpha1.SecurityGroupRule{Direction: dir, EtherType: et}
	if proto != "" {
		r.Protocol = ptr.To(proto)
	}
	if min >= 0 {
		r.PortRangeMin = ptr.To(min)
	}
	if max >= 0 {
		r.PortRangeMax = ptr.To(max)
	}
	if prefix != "" {
		r.RemoteIPPrefix = ptr.To(prefix)
	}
	return r
}

func newSecurityGroup(ns, name string, p v1alpha1.SecurityGroupParameters) *v1alpha1.SecurityGroup {
	return &v1alpha1.SecurityGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecurityGroupSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{
				ProviderConfigReference: &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "default"},
			},
			ForProvider: p,
		},
	}
}

func get(t *testing.T, key client.ObjectKey) *v1alpha1.SecurityGroup {
	t.Helper()
	sg := &v1alpha1.SecurityGroup{}
	if err := env.Kube.Get(harness.Ctx(t), key, sg); err != nil {
		t.Fatalf("cannot get SecurityGroup %s: %v", key, err)
	}
	return sg
}

// waitForReady waits until the resource is Ready and Synced and returns it.
func waitForReady(t *testing.T, key client.ObjectKey) *v1alpha1.SecurityGroup {
	t.Helper()
	var sg *v1alpha1.SecurityGroup
	harness.Eventually(t, waitReady, "SecurityGroup "+key.String()+" Ready", func() error {
		sg = &v1alpha1.SecurityGroup{}
		if err := env.Kube.Get(harness.Ctx(t), key, sg); err != nil {
			return err
		}
		if err := harness.ConditionIs(sg, xpv2.TypeSynced, "True"); err != nil {
			return err
		}
		return harness.ConditionIs(sg, xpv2.TypeReady, "True")
	})
	return sg
}

// ruleSignature is how the tests compare rules in Neutron: what Neutron stores, as a string.
func ruleSignature(r rules.SecGroupRule) string {
	s := r.Direction + "/" + r.EtherType + "/" + r.Protocol
	if r.PortRangeMin != 0 || r.PortRangeMax != 0 {
		s += fmt.Sprintf("/%d-%d", r.PortRangeMin, r.PortRangeMax)
	}
	if r.RemoteIPPrefix != "" {
		s += "/" + r.RemoteIPPrefix
	}
	if r.RemoteGroupID != "" {
		s += "/group:" + r.RemoteGroupID
	}
	return s
}

func waitForNeutronRules(t *testing.T, id string, want ...string) {
	t.Helper()
	slices.Sort(want)
	harness.Eventually(t, 30*time.Second, "rules of "+id+" in Neutron", func() error {
		sg, err := groups.Get(harness.Ctx(t), env.Neutron, id).Extract()
		if err != nil {
			return err
		}
		got := make([]string, 0, len(sg.Rules))
		for _, r := range sg.Rules {
			got = append(got, ruleSignature(r))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("got rules\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		return nil
	})
}

func waitForEvent(t *testing.T, ns, name, reason, contains string) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, "event "+reason+" on "+name, func() error {
		l := &corev1.EventList{}
		if err := env.Kube.List(harness.Ctx(t), l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, contains) {
				return nil
			}
		}
		return fmt.Errorf("no event %s mentioning %q among %d events", reason, contains, len(l.Items))
	})
}

func waitForNeutronGone(t *testing.T, id string) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, "security group "+id+" deleted in Neutron", func() error {
		_, err := groups.Get(harness.Ctx(t), env.Neutron, id).Extract()
		if gophercloud.ResponseCodeIs(err, 404) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still exists")
	})
}

func waitForDeleted(t *testing.T, key client.ObjectKey) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, "SecurityGroup "+key.String()+" gone", func() error {
		err := env.Kube.Get(harness.Ctx(t), key, &v1alpha1.SecurityGroup{})
		if kerrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still exists")
	})
}

const (
	egress4 = "egress/IPv4/"
	egress6 = "egress/IPv6/"
)

func TestSecurityGroupLifecycle(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "web"}

	// Create with rules of several shapes: names, numbers, ICMP type, IPv6.
	cr := newSecurityGroup(ns, key.Name, v1alpha1.SecurityGroupParameters{
		Description: ptr.To("web servers"),
		Tags:        []string{"team:web"},
		Rules: []v1alpha1.SecurityGroupRule{
			rule("ingress", "IPv4", "tcp", 22, 22, "10.0.0.0/8"),
			rule("ingress", "IPv4", "icmp", 8, -1, ""),
			rule("ingress", "IPv6", "tcp", 443, 443, "2001:db8::/32"),
			rule("ingress", "IPv4", "132", 3868, 3868, "192.168.0.0/16"),
		},
	})
	if err := env.Kube.Create(ctx, cr); err != nil {
		t.Fatalf("cannot create SecurityGroup: %v", err)
	}
	cr = waitForReady(t, key)
	id := meta.GetExternalName(cr)
	if id == "" || cr.Status.AtProvider.ID != id {
		t.Fatalf("external name %q and status.atProvider.id %q should both be the Neutron UUID", id, cr.Status.AtProvider.ID)
	}
	waitForNeutronRules(t, id, egress4, egress6,
		"ingress/IPv4/tcp/22-22/10.0.0.0/8",
		"ingress/IPv4/icmp/8-0",
		"ingress/IPv6/tcp/443-443/2001:db8::/32",
		"ingress/IPv4/132/3868-3868/192.168.0.0/16",
	)
	if got := len(cr.Status.AtProvider.Rules); got != 6 {
		t.Errorf("status.atProvider.rules: got %d rules, want 6", got)
	}
	sg, err := groups.Get(ctx, env.Neutron, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if sg.Name != "web" || sg.Description != "web servers" {
		t.Errorf("Neutron name/description: got %q/%q, want web/web servers", sg.Name, sg.Description)
	}
	if want := "crossplane-uid:" + string(cr.GetUID()); !slices.Contains(sg.Tags, want) || !slices.Contains(sg.Tags, "team:web") {
		t.Errorf("Neutron tags: got %v, want %q and team:web", sg.Tags, want)
	}

	// Add one rule and remove another: the group itself is kept.
	env.Mutate(t, key, cr, func() {
		cr.Spec.ForProvider.Rules = []v1alpha1.SecurityGroupRule{
			rule("ingress", "IPv4", "tcp", 22, 22, "10.0.0.0/8"),
			rule("ingress", "IPv6", "tcp", 443, 443, "2001:db8::/32"),
			rule("ingress", "IPv4", "132", 3868, 3868, "192.168.0.0/16"),
			rule("ingress", "IPv4", "udp", 53, 53, "10.0.0.0/8"),
		}
	})
	waitForNeutronRules(t, id, egress4, egress6,
		"ingress/IPv4/tcp/22-22/10.0.0.0/8",
		"ingress/IPv6/tcp/443-443/2001:db8::/32",
		"ingress/IPv4/132/3868-3868/192.168.0.0/16",
		"ingress/IPv4/udp/53-53/10.0.0.0/8",
	)
	if got := meta.GetExternalName(get(t, key)); got != id {
		t.Fatalf("a rule change replaced the group: external name %q, want %q", got, id)
	}

	// Someone deletes a rule by hand: it comes back, and an event says so.
	drifted := time.Now()
	for _, r := range sg.Rules {
		if r.Protocol == "tcp" && r.PortRangeMin == 22 {
			if err := rules.Delete(ctx, env.Neutron, r.ID).ExtractErr(); err != nil {
				t.Fatalf("cannot delete rule by hand: %v", err)
			}
		}
	}
	waitForEvent(t, ns, key.Name, "CreatedRule", "protocol 6 ports 22-22")
	waitForNeutronRules(t, id, egress4, egress6,
		"ingress/IPv4/tcp/22-22/10.0.0.0/8",
		"ingress/IPv6/tcp/443-443/2001:db8::/32",
		"ingress/IPv4/132/3868-3868/192.168.0.0/16",
		"ingress/IPv4/udp/53-53/10.0.0.0/8",
	)
	t.Logf("rule deleted by hand to rule back in Neutron: %s (poll %s)", time.Since(drifted).Round(time.Millisecond), poll)

	// Someone adds a rule by hand that differs only in its prefix: it is removed.
	extra, err := rules.Create(ctx, env.Neutron, rules.CreateOpts{
		SecGroupID: id, Direction: "ingress", EtherType: "IPv4", Protocol: "tcp",
		PortRangeMin: 22, PortRangeMax: 22, RemoteIPPrefix: "0.0.0.0/0",
	}).Extract()
	if err != nil {
		t.Fatalf("cannot add rule by hand: %v", err)
	}
	waitForEvent(t, ns, key.Name, "DeletedRule", extra.ID)
	waitForNeutronRules(t, id, egress4, egress6,
		"ingress/IPv4/tcp/22-22/10.0.0.0/8",
		"ingress/IPv6/tcp/443-443/2001:db8::/32",
		"ingress/IPv4/132/3868-3868/192.168.0.0/16",
		"ingress/IPv4/udp/53-53/10.0.0.0/8",
	)

	// Someone renames the group: the name comes back.
	if _, err := groups.Update(ctx, env.Neutron, id, groups.UpdateOpts{Name: "renamed-by-hand"}).Extract(); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "name restored", func() error {
		sg, err := groups.Get(ctx, env.Neutron, id).Extract()
		if err != nil {
			return err
		}
		if sg.Name != "web" {
			return fmt.Errorf("name is %q", sg.Name)
		}
		return nil
	})

	// Drop Neutron's default egress rules.
	env.Mutate(t, key, cr, func() { cr.Spec.ForProvider.DeleteDefaultRules = true })
	waitForNeutronRules(t, id,
		"ingress/IPv4/tcp/22-22/10.0.0.0/8",
		"ingress/IPv6/tcp/443-443/2001:db8::/32",
		"ingress/IPv4/132/3868-3868/192.168.0.0/16",
		"ingress/IPv4/udp/53-53/10.0.0.0/8",
	)
	waitForReady(t, key)

	// Delete: the group goes in Neutron, then the managed resource goes.
	if err := env.Kube.Delete(ctx, get(t, key)); err != nil {
		t.Fatal(err)
	}
	waitForNeutronGone(t, id)
	waitForDeleted(t, key)
}

func TestSecurityGroupImportObserveOnly(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)

	sg, err := groups.Create(ctx, env.Neutron, groups.CreateOpts{Name: "made-elsewhere", Description: "not ours"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = groups.Delete(context.Background(), env.Neutron, sg.ID).ExtractErr() })
	if _, err := rules.Create(ctx, env.Neutron, rules.CreateOpts{SecGroupID: sg.ID, Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: 5432, PortRangeMax: 5432}).Extract(); err != nil {
		t.Fatal(err)
	}

	cr := newSecurityGroup(ns, "imported", v1alpha1.SecurityGroupParameters{})
	cr.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	meta.SetExternalName(cr, sg.ID)
	if err := env.Kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cr)
	cr = waitForReady(t, key)
	if cr.Status.AtProvider.ID != sg.ID || cr.Status.AtProvider.Name != "made-elsewhere" || len(cr.Status.AtProvider.Rules) != 3 {
		t.Fatalf("status.atProvider: got id %q name %q and %d rules, want %q, made-elsewhere, 3 rules", cr.Status.AtProvider.ID, cr.Status.AtProvider.Name, len(cr.Status.AtProvider.Rules), sg.ID)
	}

	// Observing changes nothing in Neutron, and deleting the managed resource keeps the group.
	if err := env.Kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitForDeleted(t, key)
	got, err := groups.Get(ctx, env.Neutron, sg.ID).Extract()
	if err != nil {
		t.Fatalf("the observed-only group was deleted: %v", err)
	}
	if got.Name != "made-elsewhere" || len(got.Rules) != 3 || len(got.Tags) != 0 {
		t.Errorf("the observed-only group was changed: name %q, %d rules, tags %v", got.Name, len(got.Rules), got.Tags)
	}
}

func TestSecurityGroupDeleteInUseNamesThePorts(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)

	cr := newSecurityGroup(ns, "in-use", v1alpha1.SecurityGroupParameters{})
	if err := env.Kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cr)
	id := meta.GetExternalName(waitForReady(t, key))

	net, err := networks.Create(ctx, env.Neutron, networks.CreateOpts{Name: "sg-in-use-" + ns}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = networks.Delete(context.Background(), env.Neutron, net.ID).ExtractErr() })
	port, err := ports.Create(ctx, env.Neutron, ports.CreateOpts{
		NetworkID: net.ID, DeviceOwner: "compute:nova", DeviceID: "4a5e0a3c-3f5e-4a8e-9a63-0c4d7a1b2c3d",
		SecurityGroups: &[]string{id},
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}

	if err := env.Kube.Delete(ctx, get(t, key)); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "delete refused with the port named", func() error {
		c := get(t, key).GetCondition(xpv2.TypeSynced)
		if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, port.ID) || !strings.Contains(c.Message, "in use") {
			return fmt.Errorf("Synced is %s: %q", c.Status, c.Message)
		}
		return nil
	})
	if _, err := groups.Get(ctx, env.Neutron, id).Extract(); err != nil {
		t.Fatalf("the group in use should still exist: %v", err)
	}

	if err := ports.Delete(ctx, env.Neutron, port.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	waitForNeutronGone(t, id)
	waitForDeleted(t, key)
}

func TestSecurityGroupAdoptsGroupOfALostCreate(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)

	// Paused, so the controller does nothing until the "crashed" create is staged.
	cr := newSecurityGroup(ns, "adopt", v1alpha1.SecurityGroupParameters{
		Rules: []v1alpha1.SecurityGroupRule{rule("ingress", "IPv4", "tcp", 80, 80, "")},
	})
	meta.AddAnnotations(cr, map[string]string{meta.AnnotationKeyReconciliationPaused: "true"})
	if err := env.Kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cr)
	tag := "crossplane-uid:" + string(cr.GetUID())

	// What a provider that crashed after Neutron's answer, before storing the UUID, leaves.
	lost, err := groups.Create(ctx, env.Neutron, groups.CreateOpts{Name: "adopt"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attributestags.ReplaceAll(ctx, env.Neutron, "security-groups", lost.ID, attributestags.ReplaceAllOpts{Tags: []string{tag}}).Extract(); err != nil {
		t.Fatal(err)
	}
	env.Mutate(t, key, cr, func() {
		meta.SetExternalCreatePending(cr, time.Now())
		delete(cr.Annotations, meta.AnnotationKeyReconciliationPaused)
	})

	cr = waitForReady(t, key)
	if got := meta.GetExternalName(cr); got != lost.ID {
		t.Fatalf("external name: got %q, want the lost group %q", got, lost.ID)
	}
	waitForEvent(t, ns, key.Name, "AdoptedSecurityGroup", lost.ID)
	pages, err := groups.List(env.Neutron, groups.ListOpts{Tags: tag}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := groups.ExtractGroups(pages)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Errorf("groups tagged %s: got %d, want exactly 1 (no duplicate)", tag, len(all))
	}
	waitForNeutronRules(t, lost.ID, egress4, egress6, "ingress/IPv4/tcp/80-80")

	if err := env.Kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	waitForNeutronGone(t, lost.ID)
}

func TestSecurityGroupRemoteGroupReference(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)

	lb := newSecurityGroup(ns, "lb", v1alpha1.SecurityGroupParameters{})
	backend := newSecurityGroup(ns, "backend", v1alpha1.SecurityGroupParameters{
		Rules: []v1alpha1.SecurityGroupRule{{
			Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("tcp"),
			PortRangeMin: ptr.To[int32](8080), PortRangeMax: ptr.To[int32](8080),
			RemoteGroupRef: &xpv2.Reference{Name: "lb"},
		}},
	})
	// The referencing group first: it waits for the referenced one to have an ID.
	for _, o := range []*v1alpha1.SecurityGroup{backend, lb} {
		if err := env.Kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	lbID := meta.GetExternalName(waitForReady(t, client.ObjectKeyFromObject(lb)))
	b := waitForReady(t, client.ObjectKeyFromObject(backend))
	waitForNeutronRules(t, meta.GetExternalName(b), egress4, egress6, "ingress/IPv4/tcp/8080-8080/group:"+lbID)

	for _, o := range []*v1alpha1.SecurityGroup{b, get(t, client.ObjectKeyFromObject(lb))} {
		if err := env.Kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
		waitForDeleted(t, client.ObjectKeyFromObject(o))
	}
}

func TestSecurityGroupWithClusterProviderConfig(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)

	cpc := &apisv1alpha1.ClusterProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + ns},
		Spec: apisv1alpha1.ClusterProviderConfigSpec{
			CloudSettings: apisv1alpha1.CloudSettings{Cloud: harness.CloudDemo},
			Credentials: apisv1alpha1.ClusterCredentials{
				Source: xpv2.CredentialsSourceSecret,
				CommonCredentialSelectors: xpv2.CommonCredentialSelectors{SecretRef: &xpv2.SecretKeySelector{
					SecretReference: xpv2.SecretReference{Namespace: ns, Name: "openstack-credentials"},
					Key:             "clouds.yaml",
				}},
			},
		},
	}
	if err := env.Kube.Create(ctx, cpc); err != nil {
		t.Fatal(err)
	}
	cr := newSecurityGroup(ns, "via-cluster-config", v1alpha1.SecurityGroupParameters{})
	cr.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: cpc.Name}
	if err := env.Kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cr)
	id := meta.GetExternalName(waitForReady(t, key))

	// The usage is tracked, so the config knows it is in use.
	harness.Eventually(t, 30*time.Second, "ProviderConfigUsage recorded", func() error {
		l := &apisv1alpha1.ProviderConfigUsageList{}
		if err := env.Kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, u := range l.Items {
			if u.ProviderConfigReference.Kind == "ClusterProviderConfig" && u.ProviderConfigReference.Name == cpc.Name {
				return nil
			}
		}
		return fmt.Errorf("no usage of %s among %d", cpc.Name, len(l.Items))
	})

	if err := env.Kube.Delete(ctx, get(t, key)); err != nil {
		t.Fatal(err)
	}
	waitForNeutronGone(t, id)
	waitForDeleted(t, key)
	_ = env.Kube.Delete(ctx, cpc)
}

func TestSecurityGroupBadCredentialsSayWhy(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)

	pc := &apisv1alpha1.ProviderConfig{}
	env.Mutate(t, types.NamespacedName{Namespace: ns, Name: "default"}, pc, func() { pc.Spec.Cloud = "no-such-cloud" })
	cr := newSecurityGroup(ns, "bad-config", v1alpha1.SecurityGroupParameters{})
	if err := env.Kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "a condition that names the missing cloud", func() error {
		c := get(t, client.ObjectKeyFromObject(cr)).GetCondition(xpv2.TypeSynced)
		if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, `no cloud named "no-such-cloud"`) {
			return fmt.Errorf("Synced is %s: %q", c.Status, c.Message)
		}
		if strings.Contains(c.Message, "password") {
			return fmt.Errorf("the condition mentions the password: %q", c.Message)
		}
		return nil
	})
	if err := env.Kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
}

func TestSessionIsReusedAcrossReconciles(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)

	before := env.Logins.Load()
	const n = 5
	for i := range n {
		if err := env.Kube.Create(ctx, newSecurityGroup(ns, fmt.Sprintf("reuse-%d", i), v1alpha1.SecurityGroupParameters{})); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		waitForReady(t, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("reuse-%d", i)})
	}
	// Let a few polls pass: they must reuse the token.
	time.Sleep(3 * poll)
	// Other tests run in parallel with their own ProviderConfigs; each logs in once. This
	// namespace's config adds one login, however many resources and polls it serves.
	if got := env.Logins.Load() - before; got > 8 {
		t.Errorf("Keystone logins while %d groups were created and polled: got %d, want about one per ProviderConfig", n, got)
	}
	for i := range n {
		cr := get(t, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("reuse-%d", i)})
		if err := env.Kube.Delete(ctx, cr); err != nil {
			t.Fatal(err)
		}
		waitForNeutronGone(t, meta.GetExternalName(cr))
	}
}

// TestSecurityGroupSteadyStateCostsConstantCalls checks that polling groups that are in sync
// costs a number of Neutron calls independent of how many there are: the groups of one
// ProviderConfig are observed from one list of the project's groups (rules included), made
// again when it is older than half a poll, and a poll makes no write.
func TestSecurityGroupSteadyStateCostsConstantCalls(t *testing.T) {
	t.Parallel()
	constantListsForSizes(t, "Groups", [2]int{2, 12}, steadyStateCalls)
}

// steadyStateCalls makes n groups with 5 rules in a namespace of their own (so a session of
// their own), waits until they are Ready and settled, and counts that session's Neutron calls
// over a few polls. It returns the number of lists.
func steadyStateCalls(t *testing.T, n int) int {
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	rs := make([]v1alpha1.SecurityGroupRule, 0, 5)
	for p := int32(8000); p < 8005; p++ {
		rs = append(rs, rule("ingress", "IPv4", "tcp", p, p, "10.0.0.0/8"))
	}
	ids := make([]string, 0, n)
	for i := range n {
		cr := newSecurityGroup(ns, fmt.Sprintf("steady-%d", i), v1alpha1.SecurityGroupParameters{Rules: rs})
		if err := env.Kube.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		ids = append(ids, meta.GetExternalName(waitForReady(t, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("steady-%d", i)})))
	}
	// The token of this namespace's session: other tests' sessions call Neutron meanwhile.
	token := env.Requests.TokenOf(ids[0])
	if token == "" {
		t.Fatal("no request for the group carried a token")
	}

	lists := countSteadyLists(t, fmt.Sprintf("%d groups of 5 rules", n), token, "GET /v2.0/security-groups")
	for i, id := range ids {
		if err := env.Kube.Delete(ctx, get(t, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("steady-%d", i)})); err != nil {
			t.Fatal(err)
		}
		waitForNeutronGone(t, id)
	}
	return lists
}

// TestSessionReauthenticatesWhenTheTokenIsRevoked checks that a cached session survives the
// end of its token (expiry or revocation): it logs in again and carries on.
func TestSessionReauthenticatesWhenTheTokenIsRevoked(t *testing.T) {
	ctx := harness.Ctx(t)
	ns := newNamespace(t)

	cr := newSecurityGroup(ns, "reauth", v1alpha1.SecurityGroupParameters{})
	if err := env.Kube.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cr)
	id := meta.GetExternalName(waitForReady(t, key))

	identity, err := env.AdminIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The token of this group's session: other tests' sessions send theirs meanwhile.
	token := env.Requests.TokenOf(id)
	if token == "" {
		t.Fatal("no request for the group carried a token")
	}
	if err := tokens.Revoke(ctx, identity, token).Err; err != nil {
		t.Fatalf("cannot revoke the provider's token: %v", err)
	}
	logins := env.Logins.Load()

	// A change the provider must make with a fresh token.
	env.Mutate(t, key, cr, func() { cr.Spec.ForProvider.Description = ptr.To("after revocation") })
	harness.Eventually(t, 30*time.Second, "description updated after the token was revoked", func() error {
		sg, err := groups.Get(ctx, env.Neutron, id).Extract()
		if err != nil {
			return err
		}
		if sg.Description != "after revocation" {
			return fmt.Errorf("description is %q", sg.Description)
		}
		return nil
	})
	if env.Logins.Load() == logins {
		t.Errorf("no new Keystone login after the token was revoked")
	}
	waitForReady(t, key)

	if err := env.Kube.Delete(ctx, get(t, key)); err != nil {
		t.Fatal(err)
	}
	waitForNeutronGone(t, id)
}
