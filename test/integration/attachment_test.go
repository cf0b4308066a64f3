//go:build integration

package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	apisv1alpha1 "github.com/stackservices/provider-stackservices/apis/v1alpha1"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// fakeServer is what Nova leaves in Neutron for a server: ports whose device_id is the server.
type fakeServer struct {
	id    string
	ports []string
}

// world is a test's servers, nodes and network.
type world struct {
	t       *testing.T
	ns      string
	network string
	servers map[string]*fakeServer // by node name
}

func newWorld(t *testing.T, ns string) *world {
	t.Helper()
	net, err := networks.Create(harness.Ctx(t), env.Neutron, networks.CreateOpts{Name: "attach-" + ns}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	// The attachments of these tests select the test cluster's own Nodes and name servers by
	// ID: the platform's consent, for this namespace only.
	env.NewClusterConfig(t, hostNodesConfig(ns), ns, &apisv1alpha1.Tenancy{HostNodeNamespaces: []string{ns}, ServerNamespaces: []string{ns}})
	w := &world{t: t, ns: ns, network: net.ID, servers: map[string]*fakeServer{}}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, s := range w.servers {
			for _, p := range s.ports {
				_ = ports.Delete(ctx, env.Neutron, p).ExtractErr()
			}
		}
		_ = networks.Delete(ctx, env.Neutron, net.ID).ExtractErr()
	})
	return w
}

// server makes a "server" with n ports carrying the supplied groups, and a node for it unless
// nodeName is empty. byUUID maps the node by systemUUID instead of providerID.
func (w *world) server(nodeName string, nPorts int, labels map[string]string, byUUID bool, groups ...string) *fakeServer {
	w.t.Helper()
	ctx := harness.Ctx(w.t)
	s := &fakeServer{id: uuid.NewString()}
	for range nPorts {
		opts := ports.CreateOpts{NetworkID: w.network, DeviceOwner: "compute:nova", DeviceID: s.id}
		if len(groups) > 0 {
			opts.SecurityGroups = ptr.To(groups)
		} else {
			opts.SecurityGroups = &[]string{}
		}
		p, err := ports.Create(ctx, env.Neutron, opts).Extract()
		if err != nil {
			w.t.Fatal(err)
		}
		s.ports = append(s.ports, p.ID)
	}
	if nodeName == "" {
		nodeName = "server-" + s.id[:8]
	} else {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: labels}}
		if !byUUID {
			n.Spec.ProviderID = "openstack:///" + s.id
		}
		if err := env.Kube.Create(ctx, n); err != nil {
			w.t.Fatal(err)
		}
		w.t.Cleanup(func() { _ = env.Kube.Delete(context.Background(), n) })
		if byUUID {
			n.Status.NodeInfo.SystemUUID = strings.ToUpper(s.id)
			if err := env.Kube.Status().Update(ctx, n); err != nil {
				w.t.Fatal(err)
			}
		}
	}
	w.servers[nodeName] = s
	return s
}

// groupsOf returns the security groups of each port of the server.
func groupsOf(t *testing.T, s *fakeServer) [][]string {
	t.Helper()
	out := make([][]string, 0, len(s.ports))
	for _, id := range s.ports {
		p, err := ports.Get(harness.Ctx(t), env.Neutron, id).Extract()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.SecurityGroups)
	}
	return out
}

// waitForGroups waits until every port of the server carries exactly the groups (any order).
func waitForGroups(t *testing.T, what string, s *fakeServer, groups ...string) {
	t.Helper()
	want := slices.Clone(groups)
	slices.Sort(want)
	harness.Eventually(t, 30*time.Second, what, func() error {
		for _, got := range groupsOf(t, s) {
			got = slices.Clone(got)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return fmt.Errorf("port groups %v, want %v", got, want)
			}
		}
		return nil
	})
}

func readySecurityGroup(t *testing.T, ns, name string) string {
	t.Helper()
	cr := newSecurityGroup(ns, name, v1alpha1.SecurityGroupParameters{})
	if err := env.Kube.Create(harness.Ctx(t), cr); err != nil {
		t.Fatal(err)
	}
	return meta.GetExternalName(waitForReady(t, client.ObjectKeyFromObject(cr)))
}

func newAttachment(ns, name string, p v1alpha1.SecurityGroupAttachmentParameters) *v1alpha1.SecurityGroupAttachment {
	return &v1alpha1.SecurityGroupAttachment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecurityGroupAttachmentSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{
				ProviderConfigReference: &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: hostNodesConfig(ns)},
			},
			ForProvider: p,
		},
	}
}

// hostNodesConfig names the ClusterProviderConfig newWorld makes for namespace ns.
func hostNodesConfig(ns string) string { return "nodes-" + ns }

func getAttachment(t *testing.T, key client.ObjectKey) *v1alpha1.SecurityGroupAttachment {
	t.Helper()
	a := &v1alpha1.SecurityGroupAttachment{}
	if err := env.Kube.Get(harness.Ctx(t), key, a); err != nil {
		t.Fatal(err)
	}
	return a
}

func waitForAttachment(t *testing.T, key client.ObjectKey, ready string, check func(*v1alpha1.SecurityGroupAttachment) error) *v1alpha1.SecurityGroupAttachment {
	t.Helper()
	var a *v1alpha1.SecurityGroupAttachment
	harness.Eventually(t, waitReady, "attachment "+key.String()+" Ready="+ready, func() error {
		a = &v1alpha1.SecurityGroupAttachment{}
		if err := env.Kube.Get(harness.Ctx(t), key, a); err != nil {
			return err
		}
		if err := harness.ConditionIs(a, xpv2.TypeReady, ready); err != nil {
			return err
		}
		if check != nil {
			return check(a)
		}
		return nil
	})
	return a
}

func serversIn(a *v1alpha1.SecurityGroupAttachment) []string {
	var out []string
	for _, s := range a.Status.AtProvider.Servers {
		out = append(out, s.NodeName+"="+s.State)
	}
	slices.Sort(out)
	return out
}

func expectServers(want ...string) func(*v1alpha1.SecurityGroupAttachment) error {
	slices.Sort(want)
	return func(a *v1alpha1.SecurityGroupAttachment) error {
		if got := serversIn(a); !slices.Equal(got, want) {
			return fmt.Errorf("status servers %v, want %v", got, want)
		}
		return nil
	}
}

func TestAttachmentFollowsTheNodeSelector(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	w := newWorld(t, ns)
	sg := readySecurityGroup(t, ns, "workers")
	other := readySecurityGroup(t, ns, "cloud-provider")

	pool := map[string]string{"pool": ns}
	a := w.server(ns+"-a", 2, map[string]string{"pool": ns, "zone": "1"}, false, other) // carries another group
	b := w.server(ns+"-b", 1, map[string]string{"pool": ns, "zone": "2"}, true)         // mapped by systemUUID
	c := w.server(ns+"-c", 1, map[string]string{"pool": ns, "zone": "3"}, false)
	stranger := w.server(ns+"-other", 1, map[string]string{"pool": "someone-else"}, false)

	att := newAttachment(ns, "workers", v1alpha1.SecurityGroupAttachmentParameters{
		SecurityGroupRef: &xpv2.Reference{Name: "workers"},
		NodeSelector:     &metav1.LabelSelector{MatchLabels: pool},
	})
	if err := env.Kube.Create(ctx, att); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(att)

	// Attach to 3 nodes; the port that already carries another group keeps it.
	waitForAttachment(t, key, "True", expectServers(ns+"-a=Attached", ns+"-b=Attached", ns+"-c=Attached"))
	waitForGroups(t, "a has both groups", a, other, sg)
	waitForGroups(t, "b has the group", b, sg)
	waitForGroups(t, "c has the group", c, sg)
	waitForGroups(t, "the unselected node's server is untouched", stranger)
	waitForEvent(t, ns, "workers", "AttachedSecurityGroup", b.id)

	// Narrow the selector to one node: two servers lose the group (and only this group).
	start := time.Now()
	env.Mutate(t, key, att, func() {
		att.Spec.ForProvider.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": ns, "zone": "2"}}
	})
	waitForGroups(t, "a detached, keeping the other group", a, other)
	waitForGroups(t, "c detached", c)
	t.Logf("selector narrowed: 2 servers detached in Neutron %s after the spec change", time.Since(start).Round(time.Millisecond))
	waitForGroups(t, "b still attached", b, sg)
	waitForAttachment(t, key, "True", expectServers(ns+"-b=Attached"))
	waitForEvent(t, ns, "workers", "DetachedSecurityGroup", c.id)

	// A label change on a node reaches Neutron through the Node watch, not the next poll.
	start = time.Now()
	n := &corev1.Node{}
	env.Mutate(t, client.ObjectKey{Name: ns + "-c"}, n, func() { n.Labels["zone"] = "2" })
	waitForGroups(t, "c attached after its label changed", c, sg)
	t.Logf("label change to port update in Neutron: %s", time.Since(start).Round(time.Millisecond))

	// Someone removes the group by hand: it comes back, and an event says so.
	drifted := time.Now()
	if _, err := ports.Update(ctx, env.Neutron, b.ports[0], ports.UpdateOpts{SecurityGroups: &[]string{}}).Extract(); err != nil {
		t.Fatal(err)
	}
	waitForGroups(t, "b re-attached", b, sg)
	t.Logf("group removed by hand to group back in Neutron: %s (poll %s)", time.Since(drifted).Round(time.Millisecond), poll)
	waitForEvent(t, ns, "workers", "ReattachedSecurityGroup", b.id)

	// A node deleted: its server loses the group.
	if err := env.Kube.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-c"}}); err != nil {
		t.Fatal(err)
	}
	waitForGroups(t, "c detached after its node was deleted", c)
	waitForAttachment(t, key, "True", expectServers(ns+"-b=Attached"))

	// Delete the attachment: detached from every server it recorded.
	if err := env.Kube.Delete(ctx, getAttachment(t, key)); err != nil {
		t.Fatal(err)
	}
	waitForGroups(t, "b detached on delete", b)
	waitForGroups(t, "a keeps the other group", a, other)
	harness.Eventually(t, 30*time.Second, "attachment gone", func() error {
		err := env.Kube.Get(ctx, key, &v1alpha1.SecurityGroupAttachment{})
		if err == nil {
			return fmt.Errorf("still exists")
		}
		return client.IgnoreNotFound(err)
	})
}

func TestAttachmentReportsNodesWithoutServers(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	w := newWorld(t, ns)
	sg := readySecurityGroup(t, ns, "sg")
	ok := w.server(ns+"-ok", 1, map[string]string{"pool": ns}, false)

	// A node of another cloud, and a node whose server has no ports in this project.
	for name, pid := range map[string]string{ns + "-aws": "aws:///eu-west-1a/i-0abc", ns + "-gone": "openstack:///" + uuid.NewString()} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": ns}}, Spec: corev1.NodeSpec{ProviderID: pid}}
		if err := env.Kube.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Kube.Delete(context.Background(), n) })
	}
	att := newAttachment(ns, "pool", v1alpha1.SecurityGroupAttachmentParameters{
		SecurityGroupID: ptr.To(sg),
		NodeSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"pool": ns}},
	})
	if err := env.Kube.Create(ctx, att); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(att)
	a := waitForAttachment(t, key, "False", func(a *v1alpha1.SecurityGroupAttachment) error {
		if len(a.Status.AtProvider.UnmatchedNodes) != 1 || a.Status.AtProvider.UnmatchedNodes[0].NodeName != ns+"-aws" {
			return fmt.Errorf("unmatched nodes %+v", a.Status.AtProvider.UnmatchedNodes)
		}
		return expectServers(ns+"-gone=Error", ns+"-ok=Attached")(a)
	})
	msg := a.GetCondition(xpv2.TypeReady).Message
	for _, want := range []string{ns + "-aws", "not an OpenStack provider ID", "no Neutron ports"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message %q should mention %q", msg, want)
		}
	}
	// The server that can get the group has it anyway.
	waitForGroups(t, "the mappable server is attached", ok, sg)

	if err := env.Kube.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	waitForGroups(t, "detached on delete", ok)
}

func TestTwoAttachmentsOnTheSameServersDoNotFight(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	w := newWorld(t, ns)
	web := readySecurityGroup(t, ns, "web")
	ssh := readySecurityGroup(t, ns, "ssh")
	s1 := w.server(ns+"-1", 2, map[string]string{"pool": ns}, false)
	s2 := w.server(ns+"-2", 1, map[string]string{"pool": ns}, false)

	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"pool": ns}}
	for name, id := range map[string]string{"web": web, "ssh": ssh} {
		a := newAttachment(ns, name, v1alpha1.SecurityGroupAttachmentParameters{SecurityGroupID: ptr.To(id), NodeSelector: sel})
		if err := env.Kube.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	waitForGroups(t, "s1 has both", s1, web, ssh)
	waitForGroups(t, "s2 has both", s2, web, ssh)
	for _, name := range []string{"web", "ssh"} {
		waitForAttachment(t, client.ObjectKey{Namespace: ns, Name: name}, "True", nil)
	}
	// Several polls later, nothing has moved.
	time.Sleep(3 * poll)
	waitForGroups(t, "s1 still has both", s1, web, ssh)
	waitForGroups(t, "s2 still has both", s2, web, ssh)

	// Removing one leaves the other in place.
	if err := env.Kube.Delete(ctx, getAttachment(t, client.ObjectKey{Namespace: ns, Name: "web"})); err != nil {
		t.Fatal(err)
	}
	waitForGroups(t, "s1 keeps ssh only", s1, ssh)
	waitForGroups(t, "s2 keeps ssh only", s2, ssh)
	if err := env.Kube.Delete(ctx, getAttachment(t, client.ObjectKey{Namespace: ns, Name: "ssh"})); err != nil {
		t.Fatal(err)
	}
	waitForGroups(t, "s1 bare", s1)
}

// TestDeletingGroupAndAttachmentTogether documents the order the composition relies on: the
// group's delete is refused by Neutron while the attachment still holds ports, says which, and
// succeeds once the attachment has detached. No port ever points at a deleted group.
func TestDeletingGroupAndAttachmentTogether(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	w := newWorld(t, ns)
	sg := readySecurityGroup(t, ns, "fw")
	s := w.server(ns+"-1", 1, map[string]string{"pool": ns}, false)

	att := newAttachment(ns, "fw", v1alpha1.SecurityGroupAttachmentParameters{
		SecurityGroupRef: &xpv2.Reference{Name: "fw"},
		NodeSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"pool": ns}},
	})
	if err := env.Kube.Create(ctx, att); err != nil {
		t.Fatal(err)
	}
	waitForAttachment(t, client.ObjectKeyFromObject(att), "True", nil)
	waitForGroups(t, "attached", s, sg)

	// The group first (the worst order), then the attachment a little later.
	if err := env.Kube.Delete(ctx, get(t, client.ObjectKey{Namespace: ns, Name: "fw"})); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "group delete refused while in use", func() error {
		c := get(t, client.ObjectKey{Namespace: ns, Name: "fw"}).GetCondition(xpv2.TypeSynced)
		if !strings.Contains(c.Message, s.ports[0]) {
			return fmt.Errorf("Synced message %q does not name port %s", c.Message, s.ports[0])
		}
		return nil
	})
	if err := env.Kube.Delete(ctx, getAttachment(t, client.ObjectKeyFromObject(att))); err != nil {
		t.Fatal(err)
	}
	waitForGroups(t, "detached", s)
	waitForNeutronGone(t, sg)
	waitForDeleted(t, client.ObjectKey{Namespace: ns, Name: "fw"})
}

// TestAttachmentToAWorkloadClusterAndExplicitServers reads the nodes through a kubeconfig
// Secret (here the same API server, reached as a "remote" cluster) and attaches to an explicit
// server too.
// workloadKubeconfig writes a kubeconfig of the test cluster (standing in for a workload
// cluster, inline credentials only) into a Secret of namespace ns, and returns its selector.
func workloadKubeconfig(t *testing.T, ns string) *xpv2.LocalSecretKeySelector {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData, Token: env.Config.BearerToken}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Create(harness.Ctx(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workload"}, Data: map[string][]byte{"kubeconfig": data}}); err != nil {
		t.Fatal(err)
	}
	return &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "workload"}, Key: "kubeconfig"}
}

func TestAttachmentToAWorkloadClusterAndExplicitServers(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	w := newWorld(t, ns)
	sg := readySecurityGroup(t, ns, "remote")
	viaNode := w.server(ns+"-n", 1, map[string]string{"pool": ns}, false)
	bare := w.server("", 1, nil, false)

	att := newAttachment(ns, "remote", v1alpha1.SecurityGroupAttachmentParameters{
		SecurityGroupID:     ptr.To(sg),
		NodeSelector:        &metav1.LabelSelector{MatchLabels: map[string]string{"pool": ns}},
		ServerIDs:           []string{bare.id},
		KubeconfigSecretRef: workloadKubeconfig(t, ns),
	})
	if err := env.Kube.Create(ctx, att); err != nil {
		t.Fatal(err)
	}
	waitForAttachment(t, client.ObjectKeyFromObject(att), "True", expectServers("=Attached", ns+"-n=Attached"))
	waitForGroups(t, "node's server", viaNode, sg)
	waitForGroups(t, "explicit server", bare, sg)

	if err := env.Kube.Delete(ctx, getAttachment(t, client.ObjectKeyFromObject(att))); err != nil {
		t.Fatal(err)
	}
	waitForGroups(t, "node's server detached", viaNode)
	waitForGroups(t, "explicit server detached", bare)
}

// TestAttachmentSteadyStateCostsConstantCalls counts the Neutron calls of attachments in
// sync over a few polls, for two numbers of attachments (each over servers of its own) with a
// session each: the session's listing of the project's ports serves them all, so both make as
// many port lists, and nothing else.
func TestAttachmentSteadyStateCostsConstantCalls(t *testing.T) {
	t.Parallel()
	constantListsForSizes(t, "Attachments", [2]int{1, 6}, attachmentSteadyStateCalls)
}

// serversEach is how many servers (of two ports) each attachment of the steady-state test
// selects.
const serversEach = 4

// attachmentSteadyStateCalls makes n attachments over serversEach servers each, in a namespace
// of their own (so a session of their own), waits until they are Ready and settled, and counts
// that session's Neutron calls over a few polls. It returns the number of port lists.
func attachmentSteadyStateCalls(t *testing.T, n int) int {
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	w := newWorld(t, ns)
	sg := readySecurityGroup(t, ns, "many")
	var keys []client.ObjectKey
	var aPort string
	for i := range n {
		pool := fmt.Sprintf("%s-%d", ns, i)
		for j := range serversEach {
			aPort = w.server(fmt.Sprintf("%s-%02d", pool, j), 2, map[string]string{"pool": pool}, false).ports[0]
		}
		att := newAttachment(ns, fmt.Sprintf("many-%d", i), v1alpha1.SecurityGroupAttachmentParameters{
			SecurityGroupID: ptr.To(sg),
			NodeSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
		})
		if err := env.Kube.Create(ctx, att); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, client.ObjectKeyFromObject(att))
	}
	for _, key := range keys {
		waitForAttachment(t, key, "True", func(a *v1alpha1.SecurityGroupAttachment) error {
			if len(a.Status.AtProvider.Servers) != serversEach {
				return fmt.Errorf("%d servers in status", len(a.Status.AtProvider.Servers))
			}
			return nil
		})
	}
	// The token of this namespace's session (its attach wrote the port): other tests'
	// sessions call Neutron meanwhile.
	token := env.Requests.TokenOf("PUT /v2.0/ports/" + aPort)
	if token == "" {
		t.Fatal("no request for the port carried a token")
	}

	lists := countSteadyLists(t, fmt.Sprintf("%d attachments over %d servers (%d ports)", n, n*serversEach, 2*n*serversEach), token, "GET /v2.0/ports")
	for _, key := range keys {
		if err := env.Kube.Delete(ctx, getAttachment(t, key)); err != nil {
			t.Fatal(err)
		}
	}
	return lists
}

func TestAttachmentAdmission(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cases := map[string]struct {
		p    v1alpha1.SecurityGroupAttachmentParameters
		want string
	}{
		"NoTargets":       {p: v1alpha1.SecurityGroupAttachmentParameters{SecurityGroupID: ptr.To("x")}, want: "an attachment needs targets"},
		"NoGroup":         {p: v1alpha1.SecurityGroupAttachmentParameters{ServerIDs: []string{uuid.NewString()}}, want: "set securityGroupID, securityGroupRef or securityGroupSelector"},
		"ServerIDNotUUID": {p: v1alpha1.SecurityGroupAttachmentParameters{SecurityGroupID: ptr.To("x"), ServerIDs: []string{"web-1"}}, want: "should match"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := env.Kube.Create(harness.Ctx(t), newAttachment(ns, strings.ToLower(name), tc.p))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a refusal containing %q", err, tc.want)
			}
		})
	}
}
