package securitygroupattachment

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
)

// fakePorts keeps ports in memory and enforces Neutron's revision check. Before the first
// write to a port it can play another writer that changes the port.
type fakePorts struct {
	ports       map[string]*openstack.Port
	interloper  func(p *openstack.Port)
	writes      int
	conflicts   int
	lists, gets int
}

func (f *fakePorts) ListPortsWithSecurityGroup(context.Context, string) ([]openstack.Port, error) {
	return nil, nil
}

func (f *fakePorts) ListPortsOfDevices(_ context.Context, ids []string) ([]openstack.Port, error) {
	f.lists++
	var out []openstack.Port
	for _, p := range f.ports {
		if slices.Contains(ids, p.DeviceID) {
			out = append(out, *p)
		}
	}
	slices.SortFunc(out, func(a, b openstack.Port) int { return cmpString(a.ID, b.ID) })
	return out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (f *fakePorts) GetPort(_ context.Context, id string) (*openstack.Port, error) {
	f.gets++
	p := *f.ports[id]
	return &p, nil
}

func (f *fakePorts) SetPortSecurityGroups(_ context.Context, id string, sgs []string, revision int64) (*openstack.Port, error) {
	p := f.ports[id]
	if f.interloper != nil {
		f.interloper(p)
		p.RevisionNumber++
		f.interloper = nil
	}
	if revision != p.RevisionNumber {
		f.conflicts++
		return nil, gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusPreconditionFailed}
	}
	f.writes++
	p.SecurityGroups = slices.Clone(sgs)
	p.RevisionNumber++
	out := *p
	return &out, nil
}

func attachment() *v1alpha1.SecurityGroupAttachment {
	return &v1alpha1.SecurityGroupAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"},
		Spec: v1alpha1.SecurityGroupAttachmentSpec{ForProvider: v1alpha1.SecurityGroupAttachmentParameters{
			SecurityGroupID: ptr.To(sg),
			NodeSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"role": "web"}},
		}},
	}
}

func nodeReader(t *testing.T, nodes ...corev1.Node) *external {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	objs := make([]runtime.Object, 0, len(nodes))
	for i := range nodes {
		objs = append(objs, &nodes[i])
	}
	return &external{nodes: fake.NewClientBuilder().WithScheme(s).WithRuntimeObjects(objs...).Build(), record: event.NewNopRecorder()}
}

func webNode(name, server string) corev1.Node {
	n := node(name, "openstack:///"+server, "")
	n.Labels = map[string]string{"role": "web"}
	return n
}

// attachOnce observes the attachment, which must find an attach to do, and returns what
// Update then says.
func attachOnce(t *testing.T, e *external, cr *v1alpha1.SecurityGroupAttachment) error {
	t.Helper()
	o, err := e.Observe(context.Background(), cr)
	if err != nil || o.ResourceUpToDate {
		t.Fatalf("Observe: up to date %v, error %v; want an attach to do", o.ResourceUpToDate, err)
	}
	_, err = e.Update(context.Background(), cr)
	return err
}

func TestConcurrentWriterIsNotOverwritten(t *testing.T) {
	f := &fakePorts{ports: map[string]*openstack.Port{
		"p1": {ID: "p1", DeviceID: srvA, SecurityGroups: []string{"ccm"}, RevisionNumber: 7},
	}}
	// Another controller adds its group between our read and our write.
	f.interloper = func(p *openstack.Port) { p.SecurityGroups = append(p.SecurityGroups, "lb") }
	e := nodeReader(t, webNode("a", srvA))
	e.ports = f
	cr := attachment()

	if err := attachOnce(t, e, cr); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if diff := cmp.Diff([]string{"ccm", "lb", sg}, f.ports["p1"].SecurityGroups); diff != "" {
		t.Errorf("port groups after a concurrent write: -want, +got:\n%s", diff)
	}
	if f.conflicts != 1 || f.writes != 1 || f.gets != 1 {
		t.Errorf("calls: %d conflicts, %d writes, %d re-reads; want 1 each", f.conflicts, f.writes, f.gets)
	}
	if got := cr.Status.AtProvider.Servers; len(got) != 1 || got[0].State != v1alpha1.ServerAttached {
		t.Errorf("status after update: %+v, want the server Attached", got)
	}
}

// TestAPortMovedSinceItWasReadIsLeftAlone: a port that another server took between the read
// the plan was made from and the write (Neutron refuses the write: its revision moved on) is
// not changed for the server it no longer belongs to.
func TestAPortMovedSinceItWasReadIsLeftAlone(t *testing.T) {
	f := &fakePorts{ports: map[string]*openstack.Port{
		"p1": {ID: "p1", DeviceID: srvA, SecurityGroups: []string{"ccm"}, RevisionNumber: 7},
	}}
	f.interloper = func(p *openstack.Port) { p.DeviceID = srvB }
	e := nodeReader(t, webNode("a", srvA))
	e.ports = f
	cr := attachment()
	if err := attachOnce(t, e, cr); err == nil || !strings.Contains(err.Error(), "moved from server") {
		t.Errorf("Update: %v, want an error saying the port moved", err)
	}
	if diff := cmp.Diff([]string{"ccm"}, f.ports["p1"].SecurityGroups); diff != "" {
		t.Errorf("groups of the moved port: -want, +got:\n%s", diff)
	}
}

func TestSteadyStateIsOneListCall(t *testing.T) {
	f := &fakePorts{ports: map[string]*openstack.Port{}}
	var nodes []corev1.Node
	for i, srv := range []string{srvA, srvB} {
		id := string(rune('a' + i))
		f.ports["p"+id] = &openstack.Port{ID: "p" + id, DeviceID: srv, SecurityGroups: []string{sg}}
		nodes = append(nodes, webNode(id, srv))
	}
	e := nodeReader(t, nodes...)
	e.ports = f
	cr := attachment()
	cr.Status.AtProvider.SecurityGroupID = sg
	cr.Status.AtProvider.Servers = []v1alpha1.AttachedServer{{ServerID: srvA, State: v1alpha1.ServerAttached}, {ServerID: srvB, State: v1alpha1.ServerAttached}}

	o, err := e.Observe(context.Background(), cr)
	if err != nil || !o.ResourceExists || !o.ResourceUpToDate {
		t.Fatalf("Observe: %+v, %v; want existing and up to date", o, err)
	}
	if f.lists != 1 || f.writes != 0 || f.gets != 0 {
		t.Errorf("a steady-state Observe made %d lists, %d writes, %d gets; want 1 list only", f.lists, f.writes, f.gets)
	}
}

func TestDeleteDetachesRecordedAndMatchingServers(t *testing.T) {
	f := &fakePorts{ports: map[string]*openstack.Port{
		"pa": {ID: "pa", DeviceID: srvA, SecurityGroups: []string{"ccm", sg}},
		"pb": {ID: "pb", DeviceID: srvB, SecurityGroups: []string{sg}},
	}}
	// srvA still matches; srvB matched once (recorded) but its node is gone.
	e := nodeReader(t, webNode("a", srvA))
	e.ports = f
	cr := attachment()
	cr.Status.AtProvider.SecurityGroupID = sg
	cr.Status.AtProvider.Servers = []v1alpha1.AttachedServer{{ServerID: srvB, NodeName: "b", State: v1alpha1.ServerAttached}}
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)

	o, err := e.Observe(context.Background(), cr)
	if err != nil || !o.ResourceExists {
		t.Fatalf("Observe while deleting: %+v, %v; want it to exist until detached", o, err)
	}
	if _, err := e.Delete(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ccm"}, f.ports["pa"].SecurityGroups); diff != "" {
		t.Errorf("matching server: -want, +got:\n%s", diff)
	}
	if len(f.ports["pb"].SecurityGroups) != 0 {
		t.Errorf("recorded server still has %v", f.ports["pb"].SecurityGroups)
	}
	e.observed = nil
	if o, err := e.Observe(context.Background(), cr); err != nil || o.ResourceExists {
		t.Errorf("Observe after delete: %+v, %v; want gone", o, err)
	}
}

// recordingListing serves ports from fakePorts and records the servers it is told were written.
type recordingListing struct {
	f       *fakePorts
	reads   int
	wrote   []string
	watched []string
}

func (l *recordingListing) PortsOfDevices(ctx context.Context, ids []string) ([]openstack.Port, error) {
	l.reads++
	return l.f.ListPortsOfDevices(ctx, ids)
}

func (l *recordingListing) Wrote(id string) { l.wrote = append(l.wrote, id) }

func (l *recordingListing) Watch(_ string, ids []string, _ func()) { l.watched = ids }
func (l *recordingListing) Forget(string)                          { l.watched = nil }

// TestPortsComeFromTheListing: with a session's listing, Observe reads ports from it, never
// with a list of its own, and watches its servers for drift (until it is deleted); the listing
// is told of the servers whose ports were written (and of no other), so that it reads them
// anew.
func TestPortsComeFromTheListing(t *testing.T) {
	f := &fakePorts{ports: map[string]*openstack.Port{
		"pa": {ID: "pa", DeviceID: srvA, SecurityGroups: []string{sg}},
		"pb": {ID: "pb", DeviceID: srvB, SecurityGroups: []string{"ccm"}},
	}}
	e := nodeReader(t, webNode("a", srvA), webNode("b", srvB))
	e.ports = f
	l := &recordingListing{f: f}
	e.listing, e.watcher, e.drifted = l, "uid", func() {}
	cr := attachment()

	if err := attachOnce(t, e, cr); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if l.reads != 1 || f.lists != 1 {
		t.Errorf("reads: %d from the listing, %d lists in all; want 1, through the listing", l.reads, f.lists)
	}
	if diff := cmp.Diff([]string{srvB}, l.wrote); diff != "" {
		t.Errorf("servers the listing was told were written: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{srvA, srvB}, l.watched); diff != "" {
		t.Errorf("servers watched for drift: -want, +got:\n%s", diff)
	}

	// Once deleted, nothing is watched for it any more.
	deleted := metav1.Now()
	cr.SetDeletionTimestamp(&deleted)
	e.observed = nil
	if _, err := e.Observe(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	if l.watched != nil {
		t.Errorf("a deleted attachment still watches %v", l.watched)
	}
}
