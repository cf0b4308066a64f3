//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stackservices/provider-stackservices/apis/common"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// TestEtcdClusterOnOpenStackReplacesAServerStuckInBuild: one server of a bootstrap never
// leaves BUILD (the test bed's flavor whose first server of a group hangs). The member shows
// its server in BUILD, the other two form the cluster, and the stuck member is replaced by a
// member on a new server once it has been unhealthy for replaceUnhealthyAfter; the stuck
// server is deleted, and the cluster ends with three ACTIVE servers.
func TestEtcdClusterOnOpenStackReplacesAServerStuckInBuild(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	n := newNovaTest(t)
	cc := n.cc
	cr := onServers(newEtcdCluster(n.ns, "hung", etcdNew, 3), n.machines(t, mustEnv(t, "TESTBED_FLAVOR_STUCK")))
	cr.Spec.ForProvider.ReplaceUnhealthyAfter = ptr.To(common.Duration("20s"))
	start := time.Now()
	n.create(t, cr)

	// The stuck member is seen with its server in BUILD.
	var stuck, stuckMember string
	harness.Eventually(t, 2*time.Minute, "a member whose server is in BUILD", func() error {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		for _, m := range cr.Status.AtProvider.Members {
			if m.Server != nil && m.Server.Status == "BUILD" && time.Since(start) > 10*time.Second {
				stuck, stuckMember = m.Server.ID, m.Name
				return nil
			}
		}
		return fmt.Errorf("members %+v", cr.Status.AtProvider.Members)
	})
	waitCluster(t, cr, clusterIs(3, etcdNew))
	t.Logf("member %s, stuck in BUILD on server %s, replaced: 3 members Ready in %s", stuckMember, stuck, time.Since(start).Round(100*time.Millisecond))
	for _, m := range cr.Status.AtProvider.Members {
		if m.Name == stuckMember {
			t.Errorf("member %s, whose server was stuck, is still a member", m.Name)
		}
	}

	harness.Eventually(t, time.Minute, "the stuck server deleted", func() error {
		if _, err := servers.Get(ctx, cc, stuck).Extract(); err == nil {
			return fmt.Errorf("server %s still exists", stuck)
		}
		return nil
	})
	pages, err := servers.List(cc, servers.ListOpts{Tags: "etcd-cluster:" + string(cr.GetUID())}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srvs, _ := servers.ExtractServers(pages)
	var states []string
	for _, s := range srvs {
		states = append(states, s.Status)
	}
	if len(srvs) != 3 || strings.Count(strings.Join(states, " "), "ACTIVE") != 3 {
		t.Errorf("the cluster's servers are %v, want 3 ACTIVE", states)
	}

	sg := memberGroupID(t, cr)
	if err := env.Kube.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	gone(t, cr)
	waitNothingLeft(t, cc, cr, sg)
}
