package etcdcluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/stackservices/provider-stackservices/apis/common"
	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	etcdclient "github.com/stackservices/provider-stackservices/internal/clients/etcd"
	"github.com/stackservices/provider-stackservices/internal/etcd"
)

func cluster(name string, p v1alpha1.EtcdClusterParameters) *v1alpha1.EtcdCluster {
	return &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1alpha1.EtcdClusterSpec{ForProvider: p}}
}

func TestConnectRefusesLocalMachinesWhenDisabled(t *testing.T) {
	c := &connector{}
	_, err := c.Connect(context.Background(), cluster("a", v1alpha1.EtcdClusterParameters{Version: "3.6.16", Members: 3, Machines: &v1alpha1.Machines{Type: v1alpha1.MachinesLocal}}))
	if err == nil || !strings.Contains(err.Error(), "--enable-local-machines") {
		t.Errorf("Connect(...) = %v, want an error that says how to enable local machines", err)
	}
}

func TestSettingsOf(t *testing.T) {
	cases := map[string]struct {
		p    v1alpha1.EtcdClusterParameters
		want settings
	}{
		"Defaults": {
			p: v1alpha1.EtcdClusterParameters{Version: "3.6.16", Members: 3},
			want: settings{
				desired:      etcd.Desired{Members: 3, Version: etcd.MustParseVersion("3.6.16"), ReplaceUnhealthyAfter: 2 * time.Minute, RenewBefore: 30 * 24 * time.Hour},
				certValidity: 365 * 24 * time.Hour,
			},
		},
		"Everything": {
			p: v1alpha1.EtcdClusterParameters{
				Version: "3.5.35", Members: 5, Paused: true,
				ReplaceUnhealthyAfter: ptr.To(common.Duration("1m")),
				TLS:                   &v1alpha1.TLS{CertificateValidity: ptr.To(common.Duration("48h")), RenewBefore: ptr.To(common.Duration("24h"))},
			},
			want: settings{
				desired:      etcd.Desired{Members: 5, Version: etcd.MustParseVersion("3.5.35"), Paused: true, ReplaceUnhealthyAfter: time.Minute, RenewBefore: 24 * time.Hour},
				certValidity: 48 * time.Hour,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := settingsOf(cluster("a", tc.p))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(settings{})); diff != "" {
				t.Errorf("settingsOf(...): -want, +got:\n%s", diff)
			}
		})
	}
}

func TestInitialCluster(t *testing.T) {
	members := []etcdclient.Member{
		{ID: 1, Name: "db-0", PeerURLs: []string{"https://127.0.2.1:2380"}},
		{ID: 2, Name: "db-1", PeerURLs: []string{"https://127.0.2.2:2380"}},
		// The joining member has no name until it starts.
		{ID: 3, PeerURLs: []string{"https://127.0.2.3:2380"}, IsLearner: true},
	}
	got := initialCluster(members, 3, "db-2", "https://127.0.2.3:2380")
	want := "db-0=https://127.0.2.1:2380,db-1=https://127.0.2.2:2380,db-2=https://127.0.2.3:2380"
	if got != want {
		t.Errorf("initialCluster(...) = %q, want %q", got, want)
	}
}

func TestNextName(t *testing.T) {
	observed := func(names ...string) *observation {
		o := &observation{}
		for _, n := range names {
			o.members = append(o.members, member{plan: etcd.Member{Name: n}})
		}
		return o
	}
	cases := map[string]struct {
		last int64
		// statusWritten are the observations Update's loop wrote to status, in order,
		// before it asks for a name.
		statusWritten []*observation
		observed      *observation
		want          string
	}{
		"OneMoreThanTheHighestObserved": {
			observed: observed("db-0", "db-3", "odd"),
			want:     "db-4",
		},
		"OneMoreThanTheRecordedIndex": {
			last:     6,
			observed: observed("db-0", "db-3"),
			want:     "db-7",
		},
		// The failover of the newest member of a bootstrapped cluster (db-2, lastMemberIndex
		// never raised by a join): the loop wrote status with db-2, removed it, observed and
		// wrote status without it. A replacement named db-2 would pass for the dead member.
		"NotANameRemovedInThisUpdate": {
			statusWritten: []*observation{observed("db-0", "db-1", "db-2"), observed("db-0", "db-1")},
			observed:      observed("db-0", "db-1"),
			want:          "db-3",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := cluster("db", v1alpha1.EtcdClusterParameters{})
			cr.Status.AtProvider.LastMemberIndex = tc.last
			for _, o := range tc.statusWritten {
				o.writeStatus(cr)
			}
			if got := nextName(cr, tc.observed); got != tc.want {
				t.Errorf("nextName(...) = %q, want %q", got, tc.want)
			}
			if got, want := cr.Status.AtProvider.LastMemberIndex, nameIndex(tc.want); got != want {
				t.Errorf("status.atProvider.lastMemberIndex = %d, want %d", got, want)
			}
		})
	}
}

func TestCompareNames(t *testing.T) {
	got := []string{"db-10", "db-2", "db-1", "x"}
	slices.SortFunc(got, compareNames)
	if diff := cmp.Diff([]string{"db-1", "db-2", "db-10", "x"}, got); diff != "" {
		t.Errorf("-want, +got:\n%s", diff)
	}
}

func TestConverging(t *testing.T) {
	for phase, want := range map[string]bool{
		v1alpha1.PhaseRunning: false, v1alpha1.PhasePaused: false, v1alpha1.PhaseQuorumLost: false,
		v1alpha1.PhaseScaling: true, v1alpha1.PhaseUpgrading: true, v1alpha1.PhaseHealing: true, "": true,
	} {
		cr := cluster("a", v1alpha1.EtcdClusterParameters{})
		cr.Status.AtProvider.Phase = phase
		if got := converging(cr); got != want {
			t.Errorf("converging(%q) = %t, want %t", phase, got, want)
		}
	}
}
