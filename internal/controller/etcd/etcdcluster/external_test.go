package etcdcluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/controller/etcd/authority"
	"github.com/stackservices/provider-stackservices/internal/machines"
)

// machineList is a machines backend that only remembers: the decisions of Observe and
// Delete about what exists are what these tests are about.
type machineList struct {
	machines.Machines
	byCluster map[string][]machines.Machine
	deleted   []string
}

func (l *machineList) List(_ context.Context, cluster string) ([]machines.Machine, error) {
	return slices.Clone(l.byCluster[cluster]), nil
}

func (l *machineList) Delete(_ context.Context, cluster, name string) error {
	l.deleted = append(l.deleted, name)
	l.byCluster[cluster] = slices.DeleteFunc(l.byCluster[cluster], func(m machines.Machine) bool { return m.Name == name })
	return nil
}

func newKube(t *testing.T) client.Client {
	t.Helper()
	s := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).Build()
}

// recorded collects the reasons of the events sent.
type recorded struct{ reasons []string }

func (r *recorded) Event(_ kruntime.Object, e event.Event) {
	r.reasons = append(r.reasons, string(e.Reason))
}
func (r *recorded) WithAnnotations(...string) event.Recorder { return r }

func TestObserveWithoutACluster(t *testing.T) {
	running := []machines.Machine{{Cluster: "uid", Name: "db-0", State: machines.Running, ClientURL: "https://127.0.2.1:2379"}}
	cases := map[string]struct {
		version      string
		machines     []machines.Machine
		externalName string
		withCA       bool
		deleting     bool
		want         managed.ExternalObservation
		wantErr      string
	}{
		"NothingYet":                 {want: managed.ExternalObservation{ResourceExists: false}},
		"MachinesGoneAfterBootstrap": {externalName: "abc", wantErr: errMachinesGone},
		"MachinesWithoutCAYet":       {machines: running, want: managed.ExternalObservation{ResourceExists: false}},
		"CAGoneAfterBootstrap":       {machines: running, externalName: "abc", wantErr: errNoCA},
		"DeletingLooksAtNothingElse": {machines: running, externalName: "abc", withCA: true, deleting: true, want: managed.ExternalObservation{ResourceExists: true}},
		"DeletingWithNothingLeft":    {externalName: "abc", deleting: true, want: managed.ExternalObservation{ResourceExists: false}},
		// A foreground deletion deletes the CA Secret (a dependent) before the cluster: the
		// machines must still be found and deleted.
		"DeletingAfterTheCAWentFirst": {machines: running, externalName: "abc", deleting: true, want: managed.ExternalObservation{ResourceExists: true}},
		"BadVersionIsReportedAtFirst": {version: "3.6", machines: running, externalName: "abc", wantErr: errVersion},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			version := tc.version
			if version == "" {
				version = "3.6.16"
			}
			cr := cluster("db", v1alpha1.EtcdClusterParameters{Version: version, Members: 1})
			cr.SetUID("uid")
			if tc.externalName != "" {
				meta.SetExternalName(cr, tc.externalName)
			}
			if tc.deleting {
				cr.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
			}
			kube := newKube(t)
			if tc.withCA {
				if _, err := authority.Ensure(ctx, kube, cr, time.Hour, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			e := &external{kube: kube, machines: &machineList{byCluster: map[string][]machines.Machine{"uid": tc.machines}}, record: &recorded{}, now: time.Now}
			got, err := e.Observe(ctx, cr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Observe() = %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Observe() -want +got:\n%s", diff)
			}
		})
	}
}

func TestDeleteRemovesEveryMachineAndTheCA(t *testing.T) {
	ctx := context.Background()
	cr := cluster("db", v1alpha1.EtcdClusterParameters{Version: "3.6.16", Members: 3})
	cr.SetUID("uid")
	kube := newKube(t)
	if _, err := authority.Ensure(ctx, kube, cr, time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	ms := &machineList{byCluster: map[string][]machines.Machine{
		"uid":   {{Name: "db-0"}, {Name: "db-1"}, {Name: "db-3"}},
		"other": {{Name: "x-0"}},
	}}
	rec := &recorded{}
	b := newBackups(1, nil, nil)
	b.results["uid"] = backupResult{}
	e := &external{kube: kube, machines: ms, record: rec, backups: b, now: time.Now}
	if _, err := e.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"db-0", "db-1", "db-3"}, ms.deleted); diff != "" {
		t.Errorf("deleted machines -want +got:\n%s", diff)
	}
	if len(ms.byCluster["other"]) != 1 {
		t.Error("Delete touched another cluster's machines")
	}
	err := kube.Get(ctx, client.ObjectKey{Namespace: cr.GetNamespace(), Name: authority.SecretName(cr)}, &corev1.Secret{})
	if !kerrors.IsNotFound(err) {
		t.Errorf("the CA Secret after Delete: %v, want it gone", err)
	}
	if _, ok := b.result("uid"); ok {
		t.Error("Delete left what the provider knew of the cluster's backups")
	}
	if diff := cmp.Diff([]string{string(reasonDeletedMachines)}, rec.reasons); diff != "" {
		t.Errorf("events -want +got:\n%s", diff)
	}
}

func TestConnectRefusesUnknownMachineTypes(t *testing.T) {
	c := &connector{local: &machineList{}}
	cr := cluster("a", v1alpha1.EtcdClusterParameters{Version: "3.6.16", Members: 1, Machines: &v1alpha1.Machines{Type: "Bare"}})
	if _, err := c.Connect(context.Background(), cr); err == nil || !strings.Contains(err.Error(), `"Bare"`) {
		t.Errorf("Connect() = %v, want an error naming the type", err)
	}
}
