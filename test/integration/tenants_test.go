//go:build integration

package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	objv1alpha1 "github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	apisv1alpha1 "github.com/stackservices/provider-stackservices/apis/v1alpha1"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// These tests play a hostile or careless tenant: each one failed before the provider was
// hardened against it (issue 11's findings), and checks the harm did not happen, not only
// that a message appeared.

func kubeconfigSecret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

// recorder is an HTTP server that pretends to be a Kubernetes API server and remembers the
// credentials each request carried.
type recorder struct {
	mu    sync.Mutex
	auths []string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.auths = append(r.auths, req.Header.Get("Authorization"))
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","items":[]}`))
}

func (r *recorder) saw(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.auths {
		if strings.Contains(a, s) {
			return true
		}
	}
	return false
}

// Finding 1: a kubeconfig with an exec plugin ran /bin/sh as the provider; a tokenFile made the
// provider send a file of its host to a server the tenant chose.
func TestTenantKubeconfigCannotRunCodeOrReadFiles(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	marker := filepath.Join(dir, "exec-ran")
	hostFile := filepath.Join(dir, "host-token")
	hostSecret := fmt.Sprintf("host-secret-%d", time.Now().UnixNano())
	if err := os.WriteFile(hostFile, []byte(hostSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := func(user string) string {
		return `apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "` + srv.URL + `"}}]
users: [{name: u, user: ` + user + `}]
`
	}
	if err := env.Kube.Create(harness.Ctx(t), kubeconfigSecret(ns, "hostile", map[string]string{
		"exec":         kubeconfig(`{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, "touch ` + marker + `; echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"x\"}}'"], interactiveMode: Never}}`),
		"tokenfile":    kubeconfig(`{tokenFile: ` + hostFile + `}`),
		"authprovider": kubeconfig(`{auth-provider: {name: oidc, config: {client-id: x, idp-issuer-url: "` + srv.URL + `"}}}`),
		"certfile":     kubeconfig(`{client-certificate: ` + hostFile + `, client-key: ` + hostFile + `}`),
	})); err != nil {
		t.Fatal(err)
	}

	for key, want := range map[string]string{
		"exec":         "an exec credential plugin",
		"tokenfile":    "tokenFile (a file path)",
		"authprovider": "an auth-provider plugin",
		"certfile":     "client-certificate (a file path)",
	} {
		a := newAttachment(ns, key, v1alpha1.SecurityGroupAttachmentParameters{
			SecurityGroupID:     ptr.To(uuidV4),
			NodeSelector:        &metav1.LabelSelector{},
			KubeconfigSecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "hostile"}, Key: key},
		})
		a.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "default"}
		if err := env.Kube.Create(harness.Ctx(t), a); err != nil {
			t.Fatal(err)
		}
		waitForConditionMessage(t, toUnstructured(t, a), want)
	}
	// A few more reconciles' worth of time: nothing ran, nothing was read or sent.
	time.Sleep(5 * time.Second)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the exec plugin of a tenant's kubeconfig ran on the provider's host")
	}
	if rec.saw(hostSecret) {
		t.Error("the provider sent a file of its host to the tenant's server")
	}
}

// Finding 3: an unresolved remote group made a rule "from anywhere"; a group could not refer
// to itself.
func TestRemoteGroupRulesNeverWiden(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pg := rule("ingress", "IPv4", "tcp", 5432, 5432, "")
	pg.RemoteGroupRef = &xpv2.Reference{Name: "db-clients", Policy: &xpv2.Policy{Resolution: ptr.To(xpv2.ResolutionPolicyOptional)}}
	peers := rule("ingress", "IPv4", "tcp", 2380, 2380, "")
	peers.RemoteGroupRef = &xpv2.Reference{Name: "db"}
	db := newSecurityGroup(ns, "db", v1alpha1.SecurityGroupParameters{Rules: []v1alpha1.SecurityGroupRule{pg, peers}})
	if err := env.Kube.Create(harness.Ctx(t), db); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(db)

	// Not Ready, saying which rule waits; in Neutron only the rule on its own group.
	var id string
	harness.Eventually(t, waitReady, "db reports the rule without its remote group", func() error {
		got := get(t, key)
		id = meta.GetExternalName(got)
		c := got.GetCondition(xpv2.TypeReady)
		if id == "" || c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, `spec.forProvider.rules[0]: remoteGroupRef "db-clients"`) {
			return fmt.Errorf("external name %q, Ready %s: %s", id, c.Status, c.Message)
		}
		return nil
	})
	waitForNeutronRules(t, id, egress4, egress6, "ingress/IPv4/tcp/2380-2380/group:"+id)
	time.Sleep(3 * time.Second)
	for _, r := range neutronRules(t, id) {
		if r.PortRangeMin == 5432 {
			t.Fatalf("a rule for port 5432 exists without its remote group: %s", ruleSignature(r))
		}
	}

	// Once the group exists the rule is made, with it, and db is Ready.
	clients := newSecurityGroup(ns, "db-clients", v1alpha1.SecurityGroupParameters{})
	if err := env.Kube.Create(harness.Ctx(t), clients); err != nil {
		t.Fatal(err)
	}
	clientsID := meta.GetExternalName(waitForReady(t, client.ObjectKeyFromObject(clients)))
	waitForNeutronRules(t, id, egress4, egress6, "ingress/IPv4/tcp/2380-2380/group:"+id, "ingress/IPv4/tcp/5432-5432/group:"+clientsID)
	waitForReady(t, key)
}

func neutronRules(t *testing.T, sg string) []rules.SecGroupRule {
	t.Helper()
	pages, err := rules.List(env.Neutron, rules.ListOpts{SecGroupID: sg}).AllPages(harness.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rules.ExtractRules(pages)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// Finding 4: references resolved into other namespaces. The API has no field to name another
// (TestBadInput applies one), and a selector looks only in the resource's own namespace.
func TestSelectorsStayInTheirNamespace(t *testing.T) {
	t.Parallel()
	theirs, ours := newNamespace(t), newNamespace(t)
	target := newSecurityGroup(theirs, "target", v1alpha1.SecurityGroupParameters{})
	target.Labels = map[string]string{"pick": ours}
	if err := env.Kube.Create(harness.Ctx(t), target); err != nil {
		t.Fatal(err)
	}
	waitForReady(t, client.ObjectKeyFromObject(target))

	a := newAttachment(ours, "grab", v1alpha1.SecurityGroupAttachmentParameters{
		SecurityGroupSelector: &xpv2.Selector{MatchLabels: map[string]string{"pick": ours}},
		ServerIDs:             []string{uuidV4},
	})
	a.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "default"}
	if err := env.Kube.Create(harness.Ctx(t), a); err != nil {
		t.Fatal(err)
	}
	waitForConditionMessage(t, toUnstructured(t, a), "cannot resolve spec.forProvider.securityGroupRef")
	got := &v1alpha1.SecurityGroupAttachment{}
	if err := env.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(a), got); err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(got.Spec.ForProvider.SecurityGroupID, "") != "" {
		t.Errorf("the selector resolved to %s, a group of another namespace", *got.Spec.ForProvider.SecurityGroupID)
	}
}

// Finding 7: a bucket that already existed in the account was managed (and later left behind,
// or adopted with its objects) without anyone asking.
func TestExistingBucketIsAdoptedOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	_, cfg := readyContract(t, ns, "c", objv1alpha1.ContractParameters{})
	name := bucketName(ns, "kept")
	direct := s3Client(t, cfg)
	if err := direct.CreateBucket(harness.Ctx(t), name); err != nil {
		t.Fatal(err)
	}
	if err := putObject(harness.Ctx(t), cfg, name, "precious"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = direct.EmptyBucket(harness.Ctx(t), name)
		_ = direct.DeleteBucket(harness.Ctx(t), name)
	})

	b := newBucket(ns, "unasked", objv1alpha1.BucketParameters{BucketName: ptr.To(name), ContractRef: &xpv2.Reference{Name: "c"}, ForceDestroy: true})
	if err := env.Kube.Create(harness.Ctx(t), b); err != nil {
		t.Fatal(err)
	}
	waitForConditionMessage(t, toUnstructured(t, b), "set spec.forProvider.adoptExisting: true")
	// Deleting it (with forceDestroy!) leaves the bucket and its objects alone.
	if err := env.Kube.Delete(harness.Ctx(t), b); err != nil {
		t.Fatal(err)
	}
	gone(t, b)
	if ok, err := direct.BucketExists(harness.Ctx(t), name); err != nil || !ok {
		t.Fatalf("the bucket an unadopted Bucket named was deleted (exists %v, error %v)", ok, err)
	}

	adopt := newBucket(ns, "asked", objv1alpha1.BucketParameters{BucketName: ptr.To(name), ContractRef: &xpv2.Reference{Name: "c"}, AdoptExisting: true})
	if err := env.Kube.Create(harness.Ctx(t), adopt); err != nil {
		t.Fatal(err)
	}
	adopt = waitFor(t, adopt, "True", func(b *objv1alpha1.Bucket) error {
		if meta.GetExternalName(b) != name {
			return fmt.Errorf("external name %q", meta.GetExternalName(b))
		}
		return nil
	})
	waitForEvent(t, ns, adopt.Name, "AdoptedBucket", "with the objects it holds")
}

// Finding 9: removing 119 rules produced no DeletedRule event and 26 of 120 create events
// arrived; every create emitted a spurious Warning.
func TestRuleEventsAreSummarized(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	var many []v1alpha1.SecurityGroupRule
	for p := int32(1000); p < 1040; p++ {
		many = append(many, rule("ingress", "IPv4", "tcp", p, p, "10.0.0.0/8"))
	}
	sg := newSecurityGroup(ns, "many", v1alpha1.SecurityGroupParameters{Rules: many})
	if err := env.Kube.Create(harness.Ctx(t), sg); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(sg)
	waitForReady(t, key)
	waitForEvent(t, ns, sg.Name, "CreatedRule", "Created 40 rule(s)")

	env.Mutate(t, key, sg, func() { sg.Spec.ForProvider.Rules = nil })
	waitForEvent(t, ns, sg.Name, "DeletedRule", "Deleted 40 rule(s)")

	l := &corev1.EventList{}
	if err := env.Kube.List(harness.Ctx(t), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Items {
		if e.Type == corev1.EventTypeWarning {
			t.Errorf("a Warning event on %s: %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
		if e.Reason == "CreatedRule" || e.Reason == "DeletedRule" {
			if e.Count > 1 {
				t.Errorf("%s was emitted %d times", e.Reason, e.Count)
			}
		}
	}
}

// What a tenant names by ID or external name (an access key, a group's UUID, a server's) is no
// secret: naming another namespace's must not let it take over, show or use it. (Found in
// review of issue 11's changes.)
func TestTenantsCannotTakeOverWhatTheyName(t *testing.T) {
	t.Parallel()
	victim, thief := newNamespace(t), newNamespace(t)
	ctx := harness.Ctx(t)

	// The victim's group and keys, made through its own resources.
	db := newSecurityGroup(victim, "db", v1alpha1.SecurityGroupParameters{Rules: []v1alpha1.SecurityGroupRule{rule("ingress", "IPv4", "tcp", 5432, 5432, "10.1.0.0/16")}})
	if err := env.Kube.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	dbID := meta.GetExternalName(waitForReady(t, client.ObjectKeyFromObject(db)))
	victimContract, victimKeys := readyContract(t, victim, "keys", objv1alpha1.ContractParameters{})

	// The thief names them.
	steal := newSecurityGroup(thief, "steal", v1alpha1.SecurityGroupParameters{Rules: []v1alpha1.SecurityGroupRule{rule("ingress", "IPv4", "tcp", 5432, 5432, "0.0.0.0/0")}})
	meta.SetExternalName(steal, dbID)
	if err := env.Kube.Create(ctx, steal); err != nil {
		t.Fatal(err)
	}
	waitForConditionMessage(t, toUnstructured(t, steal), "belongs to another managed resource")

	keys := newContract(thief, "keys", objv1alpha1.ContractParameters{})
	meta.SetExternalName(keys, victimKeys.AccessKeyID)
	if err := env.Kube.Create(ctx, keys); err != nil {
		t.Fatal(err)
	}
	waitForConditionMessage(t, toUnstructured(t, keys), "was not made by this Contract")

	// Through the platform's config (which lets the thief select host Nodes), the victim's
	// group cannot be attached, and servers cannot be named without consent.
	env.NewClusterConfig(t, "thief-"+thief, thief, &apisv1alpha1.Tenancy{HostNodeNamespaces: []string{thief}})
	// The thief's own group, and a workload cluster whose Nodes' provider IDs it writes: they
	// could name any server of the platform's project, as serverIDs could.
	own := newSecurityGroup(thief, "own", v1alpha1.SecurityGroupParameters{})
	if err := env.Kube.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	ownID := meta.GetExternalName(waitForReady(t, client.ObjectKeyFromObject(own)))
	workload := workloadKubeconfig(t, thief)
	for name, tc := range map[string]struct {
		p    v1alpha1.SecurityGroupAttachmentParameters
		want string
	}{
		"borrow":   {p: v1alpha1.SecurityGroupAttachmentParameters{SecurityGroupID: ptr.To(dbID), NodeSelector: &metav1.LabelSelector{}}, want: "was not made by a SecurityGroup of namespace"},
		"open":     {p: v1alpha1.SecurityGroupAttachmentParameters{SecurityGroupID: ptr.To(dbID), ServerIDs: []string{uuidV4}}, want: "spec.tenancy.serverNamespaces"},
		"workload": {p: v1alpha1.SecurityGroupAttachmentParameters{SecurityGroupID: ptr.To(ownID), NodeSelector: &metav1.LabelSelector{}, KubeconfigSecretRef: workload}, want: "spec.tenancy.serverNamespaces"},
	} {
		a := newAttachment(thief, name, tc.p)
		a.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "thief-" + thief}
		if err := env.Kube.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		waitForConditionMessage(t, toUnstructured(t, a), tc.want)
	}

	// Deleting the thief's resources leaves the victim's alone.
	for _, o := range []client.Object{steal, keys} {
		if err := env.Kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
		gone(t, o)
	}
	waitForNeutronRules(t, dbID, egress4, egress6, "ingress/IPv4/tcp/5432-5432/10.1.0.0/16")
	if !slices.Contains(demoEC2Keys(t, victimContract.Status.AtProvider.UserID), victimKeys.AccessKeyID) {
		t.Errorf("the victim's key %s was deleted with the thief's Contract", victimKeys.AccessKeyID)
	}
}
