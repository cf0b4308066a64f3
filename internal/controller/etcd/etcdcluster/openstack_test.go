package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	netv1alpha1 "github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	pcv1alpha1 "github.com/stackservices/provider-stackservices/apis/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/machines"
)

func openstackCluster() *v1alpha1.EtcdCluster {
	cr := cluster("orders", v1alpha1.EtcdClusterParameters{Version: "3.6.16", Members: 3, Machines: &v1alpha1.Machines{
		Type: v1alpha1.MachinesOpenStack, OpenStack: &v1alpha1.OpenStackMachines{Flavor: "f", Image: "i", Subnet: ptr.To("s"), ClientCIDRs: []string{"10.0.0.0/8"}},
	}})
	cr.SetUID("uid")
	cr.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team"}
	return cr
}

func TestConnectRefusesOpenStackMachinesWithoutProviderCIDRs(t *testing.T) {
	c := &connector{}
	_, err := c.Connect(context.Background(), openstackCluster())
	if err == nil || !strings.Contains(err.Error(), "--etcd-provider-cidr") {
		t.Errorf("Connect(...) = %v, want an error that names --etcd-provider-cidr", err)
	}
}

func TestEnsureMemberGroup(t *testing.T) {
	ctx := context.Background()
	s := kruntime.NewScheme()
	if err := netv1alpha1.SchemeBuilder.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cr := openstackCluster()
	kube := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&netv1alpha1.SecurityGroup{}).Build()
	key := client.ObjectKey{Namespace: "ns", Name: "orders-members"}

	// Made on first use, owned by the cluster, on the cluster's ProviderConfig.
	_, err := ensureMemberGroup(ctx, kube, cr, []string{"198.18.0.0/15"})
	if !errors.As(err, new(groupNotReady)) {
		t.Fatalf("first call: %v, want it to wait for the group", err)
	}
	sg := &netv1alpha1.SecurityGroup{}
	if err := kube.Get(ctx, key, sg); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(sg, cr) || sg.Spec.ProviderConfigReference.Name != "team" {
		t.Errorf("group owners %v, config %v: want the cluster's", sg.GetOwnerReferences(), sg.Spec.ProviderConfigReference)
	}
	var got []string
	for _, r := range sg.Spec.ForProvider.Rules {
		remote := ptr.Deref(r.RemoteIPPrefix, "")
		if r.RemoteGroupRef != nil {
			remote = "group " + r.RemoteGroupRef.Name
		}
		got = append(got, fmt.Sprintf("%s %s %d-%d %s", r.Direction, *r.Protocol, *r.PortRangeMin, *r.PortRangeMax, remote))
	}
	want := []string{
		"ingress tcp 2380-2380 group orders-members", "ingress tcp 2379-2379 group orders-members",
		"ingress tcp 2379-2379 10.0.0.0/8", "ingress tcp 2379-2379 198.18.0.0/15",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules: -want, +got:\n%s", diff)
	}

	// A tenant opens the peer port to everyone: the next call puts the rules back. Once
	// Neutron has it, the group's ID is returned.
	sg.Spec.ForProvider.Rules[0].RemoteGroupRef, sg.Spec.ForProvider.Rules[0].RemoteIPPrefix = nil, ptr.To("0.0.0.0/0")
	meta.SetExternalName(sg, "sg-id")
	if err := kube.Update(ctx, sg); err != nil {
		t.Fatal(err)
	}
	sg.Status.AtProvider.ID = "sg-id"
	if err := kube.Status().Update(ctx, sg); err != nil {
		t.Fatal(err)
	}
	id, err := ensureMemberGroup(ctx, kube, cr, []string{"198.18.0.0/15"})
	if err != nil || id != "sg-id" {
		t.Fatalf("ensureMemberGroup = %q, %v; want sg-id", id, err)
	}
	if err := kube.Get(ctx, key, sg); err != nil {
		t.Fatal(err)
	}
	if r := sg.Spec.ForProvider.Rules[0]; r.RemoteIPPrefix != nil || r.RemoteGroupRef == nil {
		t.Errorf("the opened peer rule was not put back: %+v", r)
	}

	// A group of that name someone else made is never taken over.
	other := openstackCluster()
	other.SetUID("another-uid")
	if _, err := ensureMemberGroup(ctx, kube, other, []string{"198.18.0.0/15"}); err == nil || !strings.Contains(err.Error(), "does not belong to this cluster") {
		t.Errorf("another cluster of the same name: %v, want a refusal", err)
	}

	// Delete removes the cluster's own group only.
	if err := deleteMemberGroup(ctx, kube, other); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, key, sg); err != nil {
		t.Errorf("deleting for another cluster removed the group: %v", err)
	}
	if err := deleteMemberGroup(ctx, kube, cr); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, key, sg); err == nil {
		t.Error("the group outlived its cluster's Delete")
	}
}

// TestDeletingAClusterThatNeverRan: a cluster on OpenStack machines whose bootstrap never
// made a port (a quota refused it) still has its members' SecurityGroup; deleting the
// cluster deletes it, and the cluster stays until it is gone.
func TestDeletingAClusterThatNeverRan(t *testing.T) {
	ctx := context.Background()
	s := kruntime.NewScheme()
	if err := netv1alpha1.SchemeBuilder.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cr := openstackCluster()
	kube := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&netv1alpha1.SecurityGroup{}).Build()
	if _, err := ensureMemberGroup(ctx, kube, cr, []string{"198.18.0.0/15"}); !errors.As(err, new(groupNotReady)) {
		t.Fatal(err)
	}
	cr.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	e := &external{kube: kube, machines: &machineList{byCluster: map[string][]machines.Machine{}}, record: &recorded{}, now: time.Now}

	o, err := e.Observe(ctx, cr)
	if err != nil || !o.ResourceExists {
		t.Fatalf("Observe() = %+v, %v; want the cluster to exist while its group does", o, err)
	}
	if _, err := e.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if o, err := e.Observe(ctx, cr); err != nil || o.ResourceExists {
		t.Errorf("Observe() after Delete = %+v, %v; want the cluster gone with its group", o, err)
	}
}

// TestConnectTakesTheConfigsMachines: a cluster that names no machines takes those its
// ProviderConfig gives, in its spec (crossplane-runtime writes the spec before Create).
func TestConnectTakesTheConfigsMachines(t *testing.T) {
	given := pcv1alpha1.EtcdMachines{OpenStack: v1alpha1.OpenStackMachines{Flavor: "m1", Image: "debian", Network: ptr.To("etcd")}}
	onServers := &v1alpha1.Machines{Type: v1alpha1.MachinesOpenStack, OpenStack: given.OpenStack.DeepCopy()}
	local := &v1alpha1.Machines{Type: v1alpha1.MachinesLocal}
	cpc := &pcv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: pcv1alpha1.ClusterProviderConfigSpec{
		CloudSettings: pcv1alpha1.CloudSettings{EtcdMachines: &given},
	}}
	bare := &pcv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
	pc := &pcv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: "ns"}, Spec: pcv1alpha1.ProviderConfigSpec{
		CloudSettings: pcv1alpha1.CloudSettings{EtcdMachines: &given},
	}}
	cases := map[string]struct {
		ref          xpv2.ProviderConfigReference
		machines     *v1alpha1.Machines
		deleted      bool
		wantMachines *v1alpha1.Machines
		// wantErr is part of Connect's error; empty, Connect succeeds.
		wantErr string
	}{
		"ClusterProviderConfig": {
			ref: xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"},
			// Taken, then refused for the reason any cluster on servers would be here.
			wantMachines: onServers, wantErr: "--etcd-provider-cidr",
		},
		"ProviderConfigOfTheNamespace": {
			ref:          xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "team"},
			wantMachines: onServers, wantErr: "--etcd-provider-cidr",
		},
		"NamedMachinesStay": {
			ref: xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"}, machines: local,
			wantMachines: local, wantErr: "--enable-local-machines",
		},
		"NoneGiven": {
			ref:     xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "bare"},
			wantErr: errNoMachines,
		},
		"NoConfig": {
			ref:     xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "missing"},
			wantErr: errConfigMachines,
		},
		"NoneGivenAndDeleted": {
			ref:     xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "bare"},
			deleted: true,
		},
		"NoneGivenAndDeletedWithoutItsConfig": {
			ref:     xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "missing"},
			deleted: true,
		},
	}
	s := kruntime.NewScheme()
	if err := pcv1alpha1.SchemeBuilder.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(cpc, bare, pc).Build()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := cluster("orders", v1alpha1.EtcdClusterParameters{Version: "3.6.16", Members: 3, Machines: tc.machines})
			cr.Spec.ProviderConfigReference = &tc.ref
			if tc.deleted {
				cr.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
			}
			c := &connector{kube: kube}
			ext, err := c.Connect(context.Background(), cr)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Connect: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Connect: %v, want an error with %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantMachines, cr.Spec.ForProvider.Machines); diff != "" {
				t.Errorf("spec.forProvider.machines: -want, +got:\n%s", diff)
			}
			if !tc.deleted {
				return
			}
			// Nothing was made: the deleted cluster is let go.
			o, err := ext.Observe(context.Background(), cr)
			if err != nil || o.ResourceExists {
				t.Errorf("Observe: %+v, %v; want nothing to exist", o, err)
			}
		})
	}
}
