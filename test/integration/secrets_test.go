//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	etcdv1alpha1 "github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	objv1alpha1 "github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	apisv1alpha1 "github.com/stackservices/provider-stackservices/apis/v1alpha1"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// TestSecretsNeverLeak runs scenarios that handle every kind of secret the provider sees (S3
// keys made and rotated, an etcd client key, a wrong OpenStack password, a tenant's kubeconfig
// token sent to a server that refuses it), then searches the provider's debug log, the events
// and the status of every resource for each secret value.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := harness.Ctx(t)
	var secrets []string
	secretOf := func(ns, name, key string) string {
		t.Helper()
		s := &corev1.Secret{}
		if err := env.Kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		if len(s.Data[key]) == 0 {
			t.Fatalf("the Secret %s/%s has no %s", ns, name, key)
		}
		return string(s.Data[key])
	}

	// S3 keys, made and rotated, and a Bucket that publishes them.
	c, _ := readyContract(t, ns, "keys", objv1alpha1.ContractParameters{Rotation: &objv1alpha1.KeyRotation{Request: ptr.To("first")}})
	secrets = append(secrets, secretOf(ns, "keys-s3", "AWS_SECRET_ACCESS_KEY"))
	env.Mutate(t, client.ObjectKeyFromObject(c), c, func() { c.Spec.ForProvider.Rotation.Request = ptr.To("second") })
	harness.Eventually(t, waitReady, "rotated keys published", func() error {
		if s := secretOf(ns, "keys-s3", "AWS_SECRET_ACCESS_KEY"); s == secrets[0] {
			return fmt.Errorf("not rotated yet")
		}
		return nil
	})
	secrets = append(secrets, secretOf(ns, "keys-s3", "AWS_SECRET_ACCESS_KEY"))
	b := newBucket(ns, "data", objv1alpha1.BucketParameters{BucketName: ptr.To(bucketName(ns, "data")), ContractRef: &xpv2.Reference{Name: "keys"}})
	b.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "data-s3"}
	if err := env.Kube.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, "True", nil)

	// An etcd cluster's client key.
	ens := etcdNamespace(t, "etcd-secrets")
	runningCluster(t, newEtcdCluster(ens, "quiet", etcdNew, 1), clusterIs(1, etcdNew))
	secrets = append(secrets, secretOf(ens, "quiet-etcd", etcdv1alpha1.ConnectionTLSKey))

	// A wrong OpenStack password.
	password := fmt.Sprintf("pw-%d", time.Now().UnixNano())
	wrong := regexp.MustCompile(`(?m)^(\s+password:).*$`).ReplaceAllString(string(env.CloudsYAML), "${1} "+password)
	if err := env.Kube.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wrong"}, StringData: map[string]string{"clouds.yaml": wrong}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Create(ctx, &apisv1alpha1.ProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wrong"},
		Spec: apisv1alpha1.ProviderConfigSpec{
			CloudSettings: apisv1alpha1.CloudSettings{Cloud: harness.CloudDemo},
			Credentials: apisv1alpha1.NamespacedCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: &xpv2.LocalSecretKeySelector{
				LocalSecretReference: xpv2.LocalSecretReference{Name: "wrong"}, Key: "clouds.yaml",
			}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	sg := newSecurityGroup(ns, "locked-out", v1alpha1.SecurityGroupParameters{})
	sg.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "wrong"}
	if err := env.Kube.Create(ctx, sg); err != nil {
		t.Fatal(err)
	}
	waitForConditionMessage(t, toUnstructured(t, sg), "cannot authenticate")
	secrets = append(secrets, password)

	// A tenant's kubeconfig token, refused by its server.
	token := fmt.Sprintf("tok-%d", time.Now().UnixNano())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`, http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	kc := `apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "` + srv.URL + `"}}]
users: [{name: u, user: {token: ` + token + `}}]
`
	if err := env.Kube.Create(ctx, kubeconfigSecret(ns, "workload", map[string]string{"kubeconfig": kc})); err != nil {
		t.Fatal(err)
	}
	a := newAttachment(ns, "remote", v1alpha1.SecurityGroupAttachmentParameters{
		SecurityGroupID:     ptr.To(uuidV4),
		NodeSelector:        &metav1.LabelSelector{},
		KubeconfigSecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "workload"}, Key: "kubeconfig"},
	})
	a.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "default"}
	if err := env.Kube.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	waitForConditionMessage(t, toUnstructured(t, a), "cannot list the selected nodes")
	secrets = append(secrets, token)

	// Let the reconciles that follow (status writes, polls) log what they log.
	time.Sleep(3 * poll)
	if env.Logs.Len() == 0 {
		t.Fatal("the provider logged nothing: the search below would prove nothing")
	}
	for i, s := range secrets {
		if env.Logs.Contains(s) {
			t.Errorf("secret %d appears in the provider's debug log", i)
		}
	}
	for _, n := range []string{ns, ens} {
		events := &corev1.EventList{}
		if err := env.Kube.List(ctx, events, client.InNamespace(n)); err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			for i, s := range secrets {
				if strings.Contains(e.Message, s) {
					t.Errorf("secret %d appears in event %s %s of %s", i, e.Reason, e.Message[:min(len(e.Message), 80)], e.InvolvedObject.Name)
				}
			}
		}
		for _, kind := range []string{"SecurityGroup", "SecurityGroupAttachment", "Contract", "Bucket", "EtcdCluster"} {
			api := map[string]string{"SecurityGroup": sgAPI, "SecurityGroupAttachment": sgAPI, "Contract": objAPI, "Bucket": objAPI, "EtcdCluster": etcdAPI}[kind]
			l := &unstructured.UnstructuredList{}
			l.SetAPIVersion(api)
			l.SetKind(kind + "List")
			if err := env.Kube.List(ctx, l, client.InNamespace(n)); err != nil {
				t.Fatal(err)
			}
			for _, o := range l.Items {
				st, _ := json.Marshal(o.Object["status"])
				for i, s := range secrets {
					if strings.Contains(string(st), s) {
						t.Errorf("secret %d appears in the status of %s %s", i, kind, o.GetName())
					}
				}
			}
		}
	}
	t.Logf("searched %d secret values in %d bytes of debug log, the events and the status of every resource", len(secrets), env.Logs.Len())
}
