//go:build integration

package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	objv1alpha1 "github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// outage is how long each service stays down.
const outage = time.Minute

// openstackScript runs cluster/openstack.sh, the test bed's own way to stop and start its
// services.
func openstackScript(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(harness.RepoRoot(), "cluster", "openstack.sh"), args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cluster/openstack.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestOutages stops Keystone, Neutron and Swift's proxy in turn for a minute each. Resources
// that need the service then say so in a condition; once it is back, everything converges.
// Not parallel: the other tests would see the outages too. (Go runs it before the parallel
// tests resume.)
func TestOutages(t *testing.T) {
	ns := newNamespace(t)
	ctx := harness.Ctx(t)
	// Before the outages: a group and a bucket that work.
	sg := newSecurityGroup(ns, "steady", v1alpha1.SecurityGroupParameters{})
	if err := env.Kube.Create(ctx, sg); err != nil {
		t.Fatal(err)
	}
	waitForReady(t, client.ObjectKeyFromObject(sg))
	readyContract(t, ns, "keys", objv1alpha1.ContractParameters{})
	b := newBucket(ns, "steady", objv1alpha1.BucketParameters{BucketName: ptr.To(bucketName(ns, "steady")), ContractRef: &xpv2.Reference{Name: "keys"}})
	if err := env.Kube.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, "True", nil)
	made := []client.Object{sg, b}

	for _, o := range []struct {
		service string
		// during makes, while the service is down, a resource that needs it, and returns it
		// with what its condition must say.
		during func(t *testing.T) (client.Object, string)
	}{
		{service: "keystone", during: func(t *testing.T) (client.Object, string) {
			// A config nobody logged in with yet: its resources need Keystone.
			env.NewClusterConfig(t, "outage-"+ns, ns, nil)
			g := newSecurityGroup(ns, "during-keystone", v1alpha1.SecurityGroupParameters{})
			g.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "outage-" + ns}
			return g, "cannot authenticate to Keystone"
		}},
		{service: "neutron", during: func(t *testing.T) (client.Object, string) {
			return newSecurityGroup(ns, "during-neutron", v1alpha1.SecurityGroupParameters{}), "connection refused"
		}},
		{service: "swift-proxy", during: func(t *testing.T) (client.Object, string) {
			return newBucket(ns, "during-swift", objv1alpha1.BucketParameters{BucketName: ptr.To(bucketName(ns, "during")), ContractRef: &xpv2.Reference{Name: "keys"}}), "connection refused"
		}},
	} {
		t.Run(o.service, func(t *testing.T) {
			down := time.Now()
			openstackScript(t, "stop", o.service)
			restarted := false
			t.Cleanup(func() {
				if !restarted {
					openstackScript(t, "up")
				}
			})
			obj, says := o.during(t)
			if err := env.Kube.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			made = append(made, obj)
			waitForConditionMessage(t, toUnstructured(t, obj), says)
			time.Sleep(time.Until(down.Add(outage)))
			openstackScript(t, "up")
			restarted = true
			back := time.Now()
			for _, r := range []client.Object{sg, b, obj} {
				harness.Eventually(t, 3*time.Minute, fmt.Sprintf("%s Ready after %s came back", r.GetName(), o.service), func() error {
					u := toUnstructured(t, r)
					if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), u); err != nil {
						return err
					}
					conds, _, _ := unstructuredConditions(u)
					if conds[string(xpv2.TypeReady)] != "True" || conds[string(xpv2.TypeSynced)] != "True" {
						return fmt.Errorf("conditions %v", conds)
					}
					return nil
				})
			}
			t.Logf("%s down for %s; everything Ready and Synced %s after it came back", o.service, back.Sub(down).Round(time.Second), time.Since(back).Round(100*time.Millisecond))
		})
	}
	// Nothing of this test may poll on while the next sequential tests run: one of them
	// revokes the token the provider used last.
	for _, r := range made {
		if err := env.Kube.Delete(ctx, r); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		gone(t, r)
	}
}
