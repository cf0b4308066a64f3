//go:build e2e

// Package e2e tests the packages the way users meet them: the provider and configuration
// packages installed by a real Crossplane from a registry, a ClusterProviderConfig, and the
// composites of examples/claims applied in an app namespace. `make e2e` (called by `make test`)
// brings Crossplane up with cluster/e2e.sh and runs these tests against it.
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gophercloud/gophercloud/v2"
	goopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stackservices/provider-stackservices/apis"
	etcdv1alpha1 "github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	networkv1alpha1 "github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	objectstoragev1alpha1 "github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/test/harness"
)

const appNamespace = "shop"

type env struct {
	kube     client.Client
	neutron  *gophercloud.ServiceClient
	clouds   []byte
	warnings *warnings
}

// warnings records the API server's warnings (deprecations, unknown fields) that kubectl
// would print to whoever applies: an example or package object that draws one is a defect.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

func setup(t *testing.T) *env {
	t.Helper()
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		t.Fatal("KUBECONFIG is not set: run the e2e tests with `make e2e` (cluster/e2e.sh up)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	cfg.WarningHandler = w
	s := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	clouds, err := os.ReadFile(os.Getenv("OS_CLIENT_CONFIG_FILE"))
	if err != nil {
		t.Fatalf("cannot read the OpenStack test bed's clouds.yaml: %v", err)
	}
	cloud, err := openstack.ParseCredentials(clouds, openstack.ParseOptions{Cloud: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := goopenstack.AuthenticatedClient(context.Background(), cloud.Auth)
	if err != nil {
		t.Fatal(err)
	}
	n, err := goopenstack.NewNetworkV2(pc, cloud.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return &env{kube: c, neutron: n, clouds: clouds, warnings: w}
}

// apply creates or updates the objects of a YAML file (several documents allowed).
func (e *env) apply(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := e.kube.Apply(harness.Ctx(t), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
			t.Fatalf("cannot apply %s: %v", path, err)
		}
		if w := e.warnings.take(); len(w) > 0 {
			t.Errorf("applying %s %s of %s drew warnings: %q", u.GetKind(), u.GetName(), path, w)
		}
		out = append(out, u)
	}
	return out
}

func repo(p ...string) string { return filepath.Join(append([]string{harness.RepoRoot()}, p...)...) }

func condition(u *unstructured.Unstructured, ct string) (string, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == ct {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return s, msg
		}
	}
	return "", ""
}

func (e *env) waitReady(t *testing.T, u *unstructured.Unstructured, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	got := u.DeepCopy()
	harness.Eventually(t, timeout, fmt.Sprintf("%s %s Ready", u.GetKind(), u.GetName()), func() error {
		if err := e.kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(u), got); err != nil {
			return err
		}
		if s, msg := condition(got, "Ready"); s != "True" {
			return fmt.Errorf("Ready=%q: %s; status: %v", s, msg, got.Object["status"])
		}
		return nil
	})
	e.traceReady(t, got)
	return got
}

// traceNode is a node of `crossplane resource trace -o json`: a resource and what it composed
// or uses.
type traceNode struct {
	Object   unstructured.Unstructured `json:"object"`
	Children []traceNode               `json:"children"`
}

// traceReady shows the composite's tree the way a user would look at it, with the CLI the
// project builds (`crossplane resource trace`), in the test log, and fails unless every
// resource in it is Ready.
func (e *env) traceReady(t *testing.T, xr *unstructured.Unstructured) {
	t.Helper()
	cli := os.Getenv("E2E_CROSSPLANE_CLI")
	if cli == "" {
		t.Fatal("E2E_CROSSPLANE_CLI is not set (cluster/e2e.sh env)")
	}
	gvk := xr.GroupVersionKind()
	ref := strings.ToLower(gvk.Kind) + "." + gvk.Group + "/" + xr.GetName()
	trace := func(format string) []byte {
		out, err := exec.CommandContext(harness.Ctx(t), cli, "resource", "trace", ref, "-n", xr.GetNamespace(), "-o", format).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("crossplane resource trace %s: %v: %s", ref, err, ee.Stderr)
			}
			t.Fatalf("crossplane resource trace %s: %v", ref, err)
		}
		return out
	}
	for _, line := range strings.Split(strings.TrimRight(string(trace("wide")), "\n"), "\n") {
		t.Logf("trace %s| %s", xr.GetName(), line)
	}
	root := traceNode{}
	if err := json.Unmarshal(trace("json"), &root); err != nil {
		t.Fatalf("cannot read the trace of %s: %v", ref, err)
	}
	var walk func(n traceNode, depth int) int
	walk = func(n traceNode, depth int) int {
		count := 1
		if s, msg := condition(&n.Object, "Ready"); s != "True" {
			t.Errorf("trace of %s: %s %s is not Ready (%q: %s)", ref, n.Object.GetKind(), n.Object.GetName(), s, msg)
		}
		for _, c := range n.Children {
			count += walk(c, depth+1)
		}
		return count
	}
	if n := walk(root, 0); n < 2 {
		t.Errorf("the trace of %s shows %d resource(s): nothing it composed", ref, n)
	}
}

// deleteComposite deletes a xr and waits until it is gone (its composed resources with it).
func (e *env) deleteComposite(t *testing.T, xr *unstructured.Unstructured) {
	t.Helper()
	ctx := harness.Ctx(t)
	// In the background, as kubectl deletes by default: the composite goes at once and the
	// garbage collector deletes what it composed, which must then go too (a bucket deleted in
	// the backend, say), so that nothing of the test is left behind for the next run. (A
	// foreground deletion removes a Contract's connection Secret before the Bucket that needs
	// it is done: see the README.)
	if err := e.kube.Delete(ctx, xr, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 3*time.Minute, "composite "+xr.GetName()+" and what it composed gone", func() error {
		err := e.kube.Get(ctx, client.ObjectKeyFromObject(xr), xr.DeepCopy())
		if err == nil {
			return fmt.Errorf("the composite still exists")
		}
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		for _, list := range []client.ObjectList{
			&networkv1alpha1.SecurityGroupList{}, &networkv1alpha1.SecurityGroupAttachmentList{},
			&objectstoragev1alpha1.ContractList{}, &objectstoragev1alpha1.BucketList{}, &etcdv1alpha1.EtcdClusterList{},
		} {
			if err := e.kube.List(ctx, list, client.InNamespace(xr.GetNamespace()), client.MatchingLabels{"crossplane.io/composite": xr.GetName()}); err != nil {
				return err
			}
			if n := apimeta.LenList(list); n > 0 {
				return fmt.Errorf("%d composed %T left", n, list)
			}
		}
		return nil
	})
}

// providerMetrics reads the provider's /metrics.
func providerMetrics(t *testing.T) string {
	t.Helper()
	port := os.Getenv("E2E_PROVIDER_METRICS_PORT")
	if port == "" {
		t.Fatal("E2E_PROVIDER_METRICS_PORT is not set (cluster/e2e.sh env)")
	}
	req, err := http.NewRequestWithContext(harness.Ctx(t), http.MethodGet, "http://127.0.0.1:"+port+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

func (e *env) setUp(t *testing.T) {
	t.Helper()
	ctx := harness.Ctx(t)
	for _, ns := range []string{"crossplane-system", appNamespace} {
		_ = e.kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "openstack-credentials"}, Data: map[string][]byte{"clouds.yaml": e.clouds}}
	if err := e.kube.Create(ctx, s); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	e.apply(t, repo("examples", "providerconfig", "clusterproviderconfig.yaml"))
}

// TestNodeFirewall applies the NodeFirewall xr of examples/claims, for a node whose
// "server" (a Neutron port owned by compute:nova) gets the group, changes it, and deletes it.
func TestNodeFirewall(t *testing.T) {
	e := setup(t)
	e.setUp(t)
	ctx := harness.Ctx(t)

	net, err := networks.Create(ctx, e.neutron, networks.CreateOpts{Name: "e2e-" + uuid.NewString()[:8]}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = networks.Delete(context.Background(), e.neutron, net.ID).ExtractErr() })
	server := uuid.NewString()
	port, err := ports.Create(ctx, e.neutron, ports.CreateOpts{NetworkID: net.ID, DeviceOwner: "compute:nova", DeviceID: server, SecurityGroups: &[]string{}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ports.Delete(context.Background(), e.neutron, port.ID).ExtractErr() })
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "e2e-web-" + server[:8], Labels: map[string]string{"role": "web"}}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + server}}
	if err := e.kube.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.kube.Delete(context.Background(), node) })

	start := time.Now()
	xr := e.apply(t, repo("examples", "claims", "nodefirewall.yaml"))[0]
	xr = e.waitReady(t, xr, 3*time.Minute)
	t.Logf("NodeFirewall: xr apply to Ready in %s", time.Since(start).Round(100*time.Millisecond))
	sgID, _, _ := unstructured.NestedString(xr.Object, "status", "securityGroupID")
	if sgID == "" {
		t.Fatalf("the xr's status has no securityGroupID: %v", xr.Object["status"])
	}
	sg, err := groups.Get(ctx, e.neutron, sgID).Extract()
	if err != nil {
		t.Fatalf("the xr's group is not in Neutron: %v", err)
	}
	if len(sg.Rules) != 4 {
		t.Errorf("rules in Neutron: %d, want 4 (2 from the xr, 2 default egress)", len(sg.Rules))
	}
	waitPortGroups(t, e, port.ID, sgID)
	servers, _, _ := unstructured.NestedSlice(xr.Object, "status", "attachment", "servers")
	if len(servers) != 1 {
		t.Errorf("the xr's status.attachment.servers: %v, want the one server", servers)
	}

	// Change the rules: a new rule reaches Neutron. A merge patch, as kubectl apply sends:
	// Crossplane writes to the composite too (its resource references), so a whole-object
	// update would race it.
	changed := xr.DeepCopy()
	rules, _, _ := unstructured.NestedSlice(changed.Object, "spec", "rules")
	rules = append(rules, map[string]any{"direction": "ingress", "protocol": "udp", "portRangeMin": int64(53), "portRangeMax": int64(53)})
	_ = unstructured.SetNestedSlice(changed.Object, rules, "spec", "rules")
	if err := e.kube.Patch(ctx, changed, client.MergeFrom(xr)); err != nil {
		t.Fatal(err)
	}
	xr = changed
	harness.Eventually(t, 2*time.Minute, "the new rule in Neutron", func() error {
		sg, err := groups.Get(ctx, e.neutron, sgID).Extract()
		if err != nil {
			return err
		}
		if len(sg.Rules) != 5 {
			return fmt.Errorf("%d rules", len(sg.Rules))
		}
		return nil
	})

	// Delete the xr: the group is detached and deleted.
	if err := e.kube.Delete(ctx, xr); err != nil {
		t.Fatal(err)
	}
	waitPortGroups(t, e, port.ID)
	harness.Eventually(t, 3*time.Minute, "the group deleted in Neutron", func() error {
		_, err := groups.Get(ctx, e.neutron, sgID).Extract()
		if gophercloud.ResponseCodeIs(err, 404) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
}

func waitPortGroups(t *testing.T, e *env, portID string, want ...string) {
	t.Helper()
	harness.Eventually(t, 2*time.Minute, "port "+portID+" groups", func() error {
		p, err := ports.Get(harness.Ctx(t), e.neutron, portID).Extract()
		if err != nil {
			return err
		}
		got := slices.Clone(p.SecurityGroups)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			return fmt.Errorf("groups %v, want %v", got, want)
		}
		return nil
	})
}

// TestObjectBucket applies the ObjectBucket xr of examples/claims, uses the Secret the
// app namespace gets with an S3 SDK, and checks that deleting the xr keeps the bucket.
func TestObjectBucket(t *testing.T) {
	e := setup(t)
	e.setUp(t)
	ctx := harness.Ctx(t)

	start := time.Now()
	xr := e.apply(t, repo("examples", "claims", "objectbucket.yaml"))[0]
	xr = e.waitReady(t, xr, 3*time.Minute)
	t.Logf("ObjectBucket: xr apply to Ready in %s", time.Since(start).Round(100*time.Millisecond))

	// The provider counted what it asked of Keystone (the Contract's keys) and of S3 (the
	// bucket), by operation, without the bucket's name.
	metrics := providerMetrics(t)
	for _, want := range []string{
		`stackservices_backend_requests_total{backend="openstack",code="201",operation="POST /v3/credentials"}`,
		`stackservices_backend_requests_total{backend="s3",code="200",operation="PUT /{bucket}"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("the provider's /metrics has no %s", want)
		}
	}

	sec := &corev1.Secret{}
	harness.Eventually(t, time.Minute, "the app's Secret", func() error {
		if err := e.kube.Get(ctx, types.NamespacedName{Namespace: appNamespace, Name: xr.GetName() + "-s3"}, sec); err != nil {
			return err
		}
		for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "BUCKET_NAME", "S3_ENDPOINT", "AWS_REGION"} {
			if len(sec.Data[k]) == 0 {
				return fmt.Errorf("no %s", k)
			}
		}
		return nil
	})
	cfg := s3.Config{
		AccessKeyID: string(sec.Data["AWS_ACCESS_KEY_ID"]), SecretAccessKey: string(sec.Data["AWS_SECRET_ACCESS_KEY"]),
		Endpoint: string(sec.Data["S3_ENDPOINT"]), Region: string(sec.Data["AWS_REGION"]),
	}
	bucket := string(sec.Data["BUCKET_NAME"])
	if err := putGet(ctx, cfg, bucket); err != nil {
		t.Fatalf("an app cannot use the Secret: %v", err)
	}

	// Delete the xr: Retain is the default, so the bucket and its object stay.
	e.deleteComposite(t, xr)
	admin, err := s3ForDemo(t, e)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := admin.BucketExists(ctx, bucket); err != nil || !ok {
		t.Errorf("the retained bucket is gone: exists %v, %v", ok, err)
	}
	_ = admin.EmptyBucket(ctx, bucket)
	_ = admin.DeleteBucket(ctx, bucket)
}

// TestPackagesApplyWithoutWarnings applies (server-side, dry run) every object the packages
// and examples/provider hold to the real API server and fails on any warning it answers with:
// a deprecated API (legacy v1 XRDs, say) would print one at every apply.
func TestPackagesApplyWithoutWarnings(t *testing.T) {
	e := setup(t)
	ctx := harness.Ctx(t)
	files, _ := filepath.Glob(repo("package", "configuration", "apis", "*", "*.yaml"))
	more, _ := filepath.Glob(repo("examples", "provider", "*.yaml"))
	files = append(append(files, repo("package", "configuration", "activation.yaml")), more...)
	applied := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatal(err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := e.kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("e2e-dry-run"), client.ForceOwnership, client.DryRunAll); err != nil {
				t.Errorf("%s %s of %s: %v", u.GetKind(), u.GetName(), f, err)
			}
			applied++
			if w := e.warnings.take(); len(w) > 0 {
				t.Errorf("%s %s of %s drew warnings: %q", u.GetKind(), u.GetName(), f, w)
			}
		}
	}
	// 3 XRDs, 3 Compositions, the package's policy and the 7 objects of examples/provider.
	if applied < 14 {
		t.Errorf("applied %d objects, want at least 14", applied)
	}
}

// TestCompositeSaysWhyItIsNotReady asks for what the backend cannot do (a bucket policy on Swift)
// and checks that the xr's status carries the managed resource's explanation.
func TestCompositeSaysWhyItIsNotReady(t *testing.T) {
	e := setup(t)
	e.setUp(t)
	ctx := harness.Ctx(t)

	xr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.stackservices.io/v1alpha1",
		"kind":       "ObjectBucket",
		"metadata":   map[string]any{"name": "with-policy", "namespace": appNamespace},
		"spec": map[string]any{
			"deletionPolicy": "Delete",
			"policy": map[string]any{
				"Version":   "2012-10-17",
				"Statement": []any{map[string]any{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::x/*"}},
			},
		},
	}}
	if err := e.kube.Create(ctx, xr); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 3*time.Minute, "the xr explains why it is not Ready", func() error {
		got := xr.DeepCopy()
		if err := e.kube.Get(ctx, client.ObjectKeyFromObject(xr), got); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "bucket", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if msg, _ := m["message"].(string); m["type"] == "Ready" && strings.Contains(msg, "does not implement bucket policies") {
				return nil
			}
		}
		return fmt.Errorf("status.bucket.conditions: %v", conds)
	})
	e.deleteComposite(t, xr)
}

// TestProviderRunsWithItsOwnPermissions checks that the provider every other test relies on is
// the packaged one as Crossplane runs it: a Pod of the package's image, under the ServiceAccount
// of examples/provider's runtime config, whose permissions are what Crossplane's RBAC manager
// grants the package plus examples/provider's ClusterRole, and nothing more. The claims of
// the other tests reconcile with exactly these.
func TestProviderRunsWithItsOwnPermissions(t *testing.T) {
	e := setup(t)
	ctx := harness.Ctx(t)

	pods := &corev1.PodList{}
	if err := e.kube.List(ctx, pods, client.InNamespace("crossplane-system"), client.MatchingLabels{"pkg.crossplane.io/provider": os.Getenv("E2E_PROVIDER_NAME")}); err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		running++
		if p.Spec.ServiceAccountName != "provider-stackservices" {
			t.Errorf("the provider's Pod %s runs as ServiceAccount %q, not examples/provider's provider-stackservices", p.Name, p.Spec.ServiceAccountName)
		}
		if img := p.Spec.Containers[0].Image; !strings.Contains(img, "/stackservices/provider-stackservices:") {
			t.Errorf("the provider's Pod %s runs image %q, not the package's", p.Name, img)
		}
	}
	if running != 1 {
		t.Fatalf("%d running provider Pods, want 1", running)
	}

	sa := "system:serviceaccount:crossplane-system:provider-stackservices"
	for _, c := range []struct {
		verb, group, resource, namespace string
		allowed                          bool
	}{
		// Granted by the package (Crossplane's RBAC manager).
		{"update", "network.m.stackservices.io", "securitygroups", appNamespace, true},
		{"update", "etcd.m.stackservices.io", "etcdclusters/status", appNamespace, true},
		{"create", "", "secrets", appNamespace, true},
		{"create", "", "events", appNamespace, true},
		{"update", "coordination.k8s.io", "leases", "crossplane-system", true},
		// Granted by examples/provider.
		{"list", "", "nodes", "", true},
		{"delete", "network.m.stackservices.io", "securitygroups", appNamespace, true},
		// Never.
		{"delete", "etcd.m.stackservices.io", "etcdclusters", appNamespace, false},
		{"update", "", "nodes", "", false},
		{"create", "", "pods", appNamespace, false},
		{"create", "rbac.authorization.k8s.io", "clusterrolebindings", "", false},
		{"delete", "", "namespaces", "", false},
		{"update", "apiextensions.k8s.io", "customresourcedefinitions", "", false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   sa,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:crossplane-system", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: c.verb, Group: c.group, Resource: c.resource, Namespace: c.namespace,
			},
		}}
		if err := e.kube.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != c.allowed {
			t.Errorf("may the provider %s %s.%s in %q: %v, want %v (%s)", c.verb, c.resource, c.group, c.namespace, sar.Status.Allowed, c.allowed, sar.Status.Reason)
		}
	}
}
