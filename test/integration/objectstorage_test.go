//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/common"
	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/test/harness"
)

func newContract(ns, name string, p v1alpha1.ContractParameters) *v1alpha1.Contract {
	return &v1alpha1.Contract{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ContractSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{
				ProviderConfigReference:          &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "default"},
				WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: name + "-s3"},
			},
			ForProvider: p,
		},
	}
}

func newBucket(ns, name string, p v1alpha1.BucketParameters) *v1alpha1.Bucket {
	return &v1alpha1.Bucket{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.BucketSpec{
			ManagedResourceSpec: xpv2.ManagedResourceSpec{
				ProviderConfigReference: &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "default"},
			},
			ForProvider: p,
		},
	}
}

// waitFor waits until the managed resource is Ready=want and check passes.
func waitFor[T interface {
	client.Object
	resource.Conditioned
}](t *testing.T, obj T, ready string, check func(T) error) T {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	harness.Eventually(t, waitReady, fmt.Sprintf("%T %s Ready=%s", obj, key, ready), func() error {
		if err := env.Kube.Get(harness.Ctx(t), key, obj); err != nil {
			return err
		}
		if err := harness.ConditionIs(obj, xpv2.TypeReady, ready); err != nil {
			return err
		}
		if check != nil {
			return check(obj)
		}
		return nil
	})
	return obj
}

func gone(t *testing.T, obj client.Object) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, fmt.Sprintf("%T %s deleted", obj, obj.GetName()), func() error {
		err := env.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(obj), obj)
		if err == nil {
			return fmt.Errorf("still exists")
		}
		return client.IgnoreNotFound(err)
	})
}

// keysOf reads an S3 client config from a Contract's connection Secret, exactly as an app
// would: the AWS_* and S3_ENDPOINT keys.
func keysOf(t testing.TB, ns, secret string) (s3.Config, error) {
	return keysIn(env.Kube, ns, secret)
}

// keysIn reads the keys from the Secret through kube (the API server of another test bed).
func keysIn(kube client.Reader, ns, secret string) (s3.Config, error) {
	s := &corev1.Secret{}
	if err := kube.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: secret}, s); err != nil {
		return s3.Config{}, err
	}
	c := s3.Config{
		AccessKeyID:     string(s.Data["AWS_ACCESS_KEY_ID"]),
		SecretAccessKey: string(s.Data["AWS_SECRET_ACCESS_KEY"]),
		Endpoint:        string(s.Data["S3_ENDPOINT"]),
		Region:          string(s.Data["AWS_REGION"]),
	}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" || c.Endpoint == "" || c.Region == "" {
		return c, fmt.Errorf("the Secret %s lacks keys: %v", secret, dataKeys(s))
	}
	return c, nil
}

func dataKeys(s *corev1.Secret) []string {
	var out []string
	for k := range s.Data {
		out = append(out, k)
	}
	return out
}

func s3Client(t testing.TB, c s3.Config) *s3.Client {
	t.Helper()
	cl, err := s3.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func readyContract(t *testing.T, ns, name string, p v1alpha1.ContractParameters) (*v1alpha1.Contract, s3.Config) {
	t.Helper()
	c := newContract(ns, name, p)
	if err := env.Kube.Create(harness.Ctx(t), c); err != nil {
		t.Fatal(err)
	}
	c = waitFor(t, c, "True", nil)
	var cfg s3.Config
	harness.Eventually(t, 30*time.Second, "connection Secret published", func() error {
		var err error
		cfg, err = keysOf(t, ns, name+"-s3")
		return err
	})
	return c, cfg
}

func bucketName(ns, suffix string) string {
	n := strings.ReplaceAll(ns, "_", "-") + "-" + suffix
	if len(n) > 63 {
		n = n[len(n)-63:]
	}
	return strings.Trim(n, "-.")
}

func TestContractKeysWorkAndRotateWithoutAGap(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)

	c, cfg := readyContract(t, ns, "app", v1alpha1.ContractParameters{
		Rotation: &v1alpha1.KeyRotation{GracePeriod: ptr.To(common.Duration("8s"))},
	})
	if c.Status.AtProvider.AccessKeyID != cfg.AccessKeyID || meta.GetExternalName(c) != cfg.AccessKeyID {
		t.Fatalf("status access key %q, external name %q, Secret %q: want one key", c.Status.AtProvider.AccessKeyID, meta.GetExternalName(c), cfg.AccessKeyID)
	}
	if cfg.Endpoint != os.Getenv("S3_ENDPOINT") {
		t.Errorf("endpoint in the Secret: %q, want the catalog's S3 endpoint %q", cfg.Endpoint, os.Getenv("S3_ENDPOINT"))
	}

	// The keys work for S3, as an app would use them.
	name := bucketName(ns, "keys")
	if err := s3Client(t, cfg).CreateBucket(ctx, name); err != nil {
		t.Fatalf("the Contract's keys do not work for S3: %v", err)
	}
	// On failure paths; the end of the test deletes it while the keys still work.
	defer func() { _ = s3Client(t, cfg).DeleteBucket(context.Background(), name) }()

	// A client that re-reads the Secret for every call, as a rotating app does, writes
	// throughout the rotation: no call may fail.
	var calls, failures atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			k, err := keysOf(t, ns, "app-s3")
			if err == nil {
				_, err = s3Client(t, k).BucketExists(context.Background(), name)
			}
			calls.Add(1)
			if err != nil {
				failures.Add(1)
				firstFailure.CompareAndSwap(nil, err.Error())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	old := cfg.AccessKeyID
	env.Mutate(t, client.ObjectKeyFromObject(c), c, func() { c.Spec.ForProvider.Rotation.Request = ptr.To("rotate-1") })
	harness.Eventually(t, 30*time.Second, "new keys published", func() error {
		k, err := keysOf(t, ns, "app-s3")
		if err != nil {
			return err
		}
		if k.AccessKeyID == old {
			return errors.New("still the old key")
		}
		cfg = k
		return nil
	})
	waitFor(t, c, "True", func(c *v1alpha1.Contract) error {
		if c.Status.AtProvider.PreviousAccessKeyID != old {
			return fmt.Errorf("previous key %q, want %q", c.Status.AtProvider.PreviousAccessKeyID, old)
		}
		return nil
	})
	// The previous keys are retired after their grace period.
	waitFor(t, c, "True", func(c *v1alpha1.Contract) error {
		if c.Status.AtProvider.PreviousAccessKeyID != "" {
			return fmt.Errorf("previous key %q not retired yet", c.Status.AtProvider.PreviousAccessKeyID)
		}
		return nil
	})
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("rotation: %d S3 calls with keys re-read from the Secret, %d failed", calls.Load(), failures.Load())
	if failures.Load() != 0 {
		t.Errorf("%d of %d calls failed during rotation; first: %v", failures.Load(), calls.Load(), firstFailure.Load())
	}
	if _, err := s3Client(t, cfg).BucketExists(ctx, name); err != nil {
		t.Errorf("the new keys do not work: %v", err)
	}

	// Delete revokes the keys: the bucket goes first, while they work.
	if err := s3Client(t, cfg).DeleteBucket(ctx, name); err != nil {
		t.Errorf("deleting the test's bucket with the new keys: %v", err)
	}
	if err := env.Kube.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	gone(t, c)
	harness.Eventually(t, 30*time.Second, "keys revoked", func() error {
		if _, err := s3Client(t, cfg).BucketExists(context.Background(), name); err == nil {
			return errors.New("the deleted Contract's keys still work")
		}
		return nil
	})
}

func TestBucketOnSwift(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	_, cfg := readyContract(t, ns, "owner", v1alpha1.ContractParameters{})
	direct := s3Client(t, cfg)
	name := bucketName(ns, "swift")

	b := newBucket(ns, "assets", v1alpha1.BucketParameters{
		BucketName:  ptr.To(name),
		ContractRef: &xpv2.Reference{Name: "owner"},
		CannedACL:   ptr.To("public-read"),
		Versioning:  ptr.To("Enabled"),
	})
	if err := env.Kube.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	b = waitFor(t, b, "True", func(b *v1alpha1.Bucket) error {
		for _, g := range b.Status.AtProvider.Grants {
			if g.Permission == "READ" && strings.HasSuffix(g.Value, "/AllUsers") {
				return nil
			}
		}
		return fmt.Errorf("grants %+v lack AllUsers READ", b.Status.AtProvider.Grants)
	})
	if b.Status.AtProvider.Versioning != "Enabled" || b.Status.AtProvider.OwnerID == "" {
		t.Errorf("status: versioning %q owner %q", b.Status.AtProvider.Versioning, b.Status.AtProvider.OwnerID)
	}
	if v, err := direct.GetVersioning(ctx, name); err != nil || v != "Enabled" {
		t.Errorf("versioning in Swift: %q, %v", v, err)
	}

	// ACL drift made by hand is corrected.
	if err := direct.PutACL(ctx, name, s3.ACL{Owner: s3.Owner{ID: b.Status.AtProvider.OwnerID}, Grants: s3.WithOwner(nil, s3.Owner{ID: b.Status.AtProvider.OwnerID})}); err != nil {
		t.Fatal(err)
	}
	waitForEvent(t, ns, "assets", "SetACL", "")
	harness.Eventually(t, 30*time.Second, "public-read restored", func() error {
		acl, err := direct.GetACL(ctx, name)
		if err != nil {
			return err
		}
		want, _ := s3.ExpandCannedACL("public-read", acl.Owner)
		if !s3.GrantsEqual(want, acl.Grants) {
			return fmt.Errorf("grants %+v", acl.Grants)
		}
		return nil
	})

	// A policy on Swift: a condition says it cannot be applied; nothing loops.
	env.Mutate(t, client.ObjectKeyFromObject(b), b, func() {
		b.Spec.ForProvider.Policy = &apiextensionsv1.JSON{Raw: []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + name + `/*"}]}`)}
	})
	waitFor(t, b, "False", func(b *v1alpha1.Bucket) error {
		if m := b.GetCondition(xpv2.TypeReady).Message; !strings.Contains(m, "does not implement bucket policies") {
			return fmt.Errorf("Ready message %q", m)
		}
		return nil
	})
	env.Mutate(t, client.ObjectKeyFromObject(b), b, func() { b.Spec.ForProvider.Policy = nil })
	waitFor(t, b, "True", nil)

	// Grants instead of the canned ACL: read for another project's user (Swift's canonical
	// IDs are project:user); the owner keeps full control.
	env.Mutate(t, client.ObjectKeyFromObject(b), b, func() {
		b.Spec.ForProvider.CannedACL = nil
		b.Spec.ForProvider.GrantRead = []v1alpha1.Grantee{{Type: "id", Value: "demo2:demo2"}}
	})
	harness.Eventually(t, 30*time.Second, "grant applied in Swift", func() error {
		acl, err := direct.GetACL(ctx, name)
		if err != nil {
			return err
		}
		want := s3.WithOwner([]s3.Grant{{Permission: "READ", Grantee: s3.Grantee{Type: s3.GranteeID, Value: "demo2:demo2"}}}, acl.Owner)
		if !s3.GrantsEqual(want, acl.Grants) {
			return fmt.Errorf("grants %+v", acl.Grants)
		}
		return nil
	})
	waitFor(t, b, "True", nil)

	// A bucket with objects is not deleted unless asked; then it is, with its objects.
	if err := putObject(ctx, cfg, name, "hello.txt"); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "delete refused: not empty", func() error {
		c := &v1alpha1.Bucket{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(b), c); err != nil {
			return err
		}
		if m := c.GetCondition(xpv2.TypeSynced).Message; !strings.Contains(m, "still holds objects") {
			return fmt.Errorf("Synced message %q", m)
		}
		return nil
	})
	if ok, err := direct.BucketExists(ctx, name); err != nil || !ok {
		t.Fatalf("the non-empty bucket must still exist: %v %v", ok, err)
	}
	env.Mutate(t, client.ObjectKeyFromObject(b), b, func() { b.Spec.ForProvider.ForceDestroy = true })
	gone(t, b)
	if ok, _ := direct.BucketExists(ctx, name); ok {
		t.Error("forceDestroy: the bucket still exists")
	}
}

func TestBucketEmptyIsDeleted(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	readyContract(t, ns, "c", v1alpha1.ContractParameters{})
	name := bucketName(ns, "plain")
	b := newBucket(ns, "plain", v1alpha1.BucketParameters{BucketName: ptr.To(name), ContractRef: &xpv2.Reference{Name: "c"}})
	b.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "plain-bucket"}
	if err := env.Kube.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, "True", nil)

	// The bucket's Secret is all an app needs: keys, endpoint, region and the bucket name.
	var cfg s3.Config
	var bucket string
	harness.Eventually(t, 30*time.Second, "bucket Secret published", func() error {
		var err error
		if cfg, err = keysOf(t, ns, "plain-bucket"); err != nil {
			return err
		}
		s := &corev1.Secret{}
		if err := env.Kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: "plain-bucket"}, s); err != nil {
			return err
		}
		if bucket = string(s.Data["BUCKET_NAME"]); bucket != name {
			return fmt.Errorf("BUCKET_NAME %q, want %q", bucket, name)
		}
		return nil
	})
	if err := s3PutObject(ctx, cfg, bucket, "app.txt", []byte("from the app")); err != nil {
		t.Fatalf("an app using the bucket's Secret cannot write: %v", err)
	}
	if err := s3Client(t, cfg).EmptyBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}

	if err := env.Kube.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	gone(t, b)
}

func putObject(ctx context.Context, cfg s3.Config, bucket, key string) error {
	return s3PutObject(ctx, cfg, bucket, key, []byte("hello"))
}

// vgwSecret writes a credentials Secret for versitygw (the second S3 server, with bucket
// policies) in the keys a Contract's Secret has, and returns a direct client for it.
func vgwSecret(t *testing.T, ns, name, access, secret string) *s3.Client {
	t.Helper()
	cfg := vgwConfig(t)
	cfg.AccessKeyID, cfg.SecretAccessKey = access, secret
	return s3Secret(t, env.Kube, ns, name, cfg)
}

// vgwConfig is versitygw's endpoint with its root keys.
func vgwConfig(t testing.TB) s3.Config {
	t.Helper()
	cfg := s3.Config{Endpoint: os.Getenv("VGW_ENDPOINT"), Region: os.Getenv("VGW_REGION"), AccessKeyID: os.Getenv("VGW_ACCESS_KEY"), SecretAccessKey: os.Getenv("VGW_SECRET_KEY")}
	if cfg.Endpoint == "" {
		t.Fatal("VGW_ENDPOINT is not set: start versitygw with `cluster/versitygw.sh up` and source its env (make test does)")
	}
	return cfg
}

// s3Secret writes cfg as a credentials Secret (the keys a Contract's Secret has) through
// kube, and returns a direct client for it.
func s3Secret(t *testing.T, kube client.Client, ns, name string, cfg s3.Config) *s3.Client {
	t.Helper()
	if err := kube.Create(harness.Ctx(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		StringData: map[string]string{
			"AWS_ACCESS_KEY_ID": cfg.AccessKeyID, "AWS_SECRET_ACCESS_KEY": cfg.SecretAccessKey,
			"S3_ENDPOINT": cfg.Endpoint, "AWS_REGION": cfg.Region,
		},
	}); err != nil {
		t.Fatal(err)
	}
	return s3Client(t, cfg)
}

func policyFor(bucket, principal string, actions ...string) string {
	return fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Sid":"read","Effect":"Allow","Principal":{"AWS":[%q]},"Action":%s,"Resource":["arn:aws:s3:::%s","arn:aws:s3:::%s/*"]}]}`,
		principal, mustJSON(actions), bucket, bucket)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// eventsAbout are the events of that reason about the object named name.
func eventsAbout(t *testing.T, ns, name, reason string) []corev1.Event {
	t.Helper()
	l := &corev1.EventList{}
	if err := env.Kube.List(harness.Ctx(t), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range l.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// countEvents is how many times events of that reason were recorded about the object (a
// repeated event counts its repeats).
func countEvents(t *testing.T, ns, name, reason string) int {
	t.Helper()
	n := 0
	for _, e := range eventsAbout(t, ns, name, reason) {
		n += int(max(e.Count, 1))
	}
	return n
}

// eventMessages are the messages of the events of that reason about the object named name.
func eventMessages(t *testing.T, ns, name, reason string) []string {
	t.Helper()
	var out []string
	for _, e := range eventsAbout(t, ns, name, reason) {
		out = append(out, e.Message)
	}
	return out
}

func TestBucketPolicyAndACLOnVersitygw(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	root := vgwSecret(t, ns, "vgw", os.Getenv("VGW_ACCESS_KEY"), os.Getenv("VGW_SECRET_KEY"))
	reader := createVGWUser(t, "reader-"+ns[len(ns)-5:])
	name := bucketName(ns, "vgw")

	doc := policyFor(name, reader, "s3:GetObject", "s3:ListBucket")
	b := newBucket(ns, "policy", v1alpha1.BucketParameters{
		BucketName:           ptr.To(name),
		CredentialsSecretRef: &xpv2.LocalSecretReference{Name: "vgw"},
		CannedACL:            ptr.To("public-read"),
		Policy:               &apiextensionsv1.JSON{Raw: []byte(doc)},
		Versioning:           ptr.To("Enabled"),
	})
	if err := env.Kube.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	b = waitFor(t, b, "True", func(b *v1alpha1.Bucket) error {
		if b.Status.AtProvider.Policy == "" || !ptr.Deref(b.Status.AtProvider.PolicySupported, false) {
			return fmt.Errorf("status policy %q supported %v", b.Status.AtProvider.Policy, b.Status.AtProvider.PolicySupported)
		}
		return nil
	})
	if got, err := root.GetPolicy(ctx, name); err != nil || !mustEqualPolicy(t, doc, got) {
		t.Fatalf("policy in versitygw: %q, %v", got, err)
	}
	acl, err := root.GetACL(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := s3.ExpandCannedACL("public-read", acl.Owner)
	if !s3.GrantsEqual(want, acl.Grants) {
		t.Errorf("ACL: got %+v, want public-read", acl.Grants)
	}

	// The same policy written differently (key order, a single action as a string, extra
	// whitespace) is not a change: nothing is re-written.
	before := countEvents(t, ns, "policy", "SetPolicy")
	reordered := fmt.Sprintf(`{ "Statement": [ { "Resource": ["arn:aws:s3:::%s/*", "arn:aws:s3:::%s"], "Action": ["s3:ListBucket", "s3:GetObject"], "Principal": {"AWS": %q}, "Effect": "Allow", "Sid": "read" } ], "Version": "2012-10-17" }`, name, name, reader)
	env.Mutate(t, client.ObjectKeyFromObject(b), b, func() { b.Spec.ForProvider.Policy = &apiextensionsv1.JSON{Raw: []byte(reordered)} })
	time.Sleep(3 * poll)
	if after := countEvents(t, ns, "policy", "SetPolicy"); after != before {
		t.Errorf("a reordered but equal policy was re-written: SetPolicy events %d -> %d", before, after)
	}

	// Drift made by hand is corrected: another policy, and the ACL made private.
	if err := root.PutPolicy(ctx, name, policyFor(name, reader, "s3:ListBucket")); err != nil {
		t.Fatal(err)
	}
	if err := root.PutCannedACL(ctx, name, "private"); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "policy and ACL restored", func() error {
		got, err := root.GetPolicy(ctx, name)
		if err != nil {
			return err
		}
		if eq, _ := s3.PoliciesEqual(doc, got); !eq {
			return fmt.Errorf("policy %s", got)
		}
		acl, err := root.GetACL(ctx, name)
		if err != nil {
			return err
		}
		if !s3.GrantsEqual(want, acl.Grants) {
			return fmt.Errorf("grants %+v", acl.Grants)
		}
		return nil
	})
	waitForEvent(t, ns, "policy", "SetPolicy", "")

	// Grants instead of a canned ACL: read for the reader account, the owner keeps full control.
	env.Mutate(t, client.ObjectKeyFromObject(b), b, func() {
		b.Spec.ForProvider.CannedACL = nil
		b.Spec.ForProvider.GrantRead = []v1alpha1.Grantee{{Type: "id", Value: reader}}
	})
	harness.Eventually(t, 30*time.Second, "grant applied", func() error {
		acl, err := root.GetACL(ctx, name)
		if err != nil {
			return err
		}
		want := s3.WithOwner([]s3.Grant{{Permission: "READ", Grantee: s3.Grantee{Type: s3.GranteeID, Value: reader}}}, acl.Owner)
		if !s3.GrantsEqual(want, acl.Grants) {
			return fmt.Errorf("grants %+v", acl.Grants)
		}
		return nil
	})
	waitFor(t, b, "True", nil)

	env.Mutate(t, client.ObjectKeyFromObject(b), b, func() { b.Spec.ForProvider.ForceDestroy = true })
	if err := putObject(ctx, s3.Config{Endpoint: os.Getenv("VGW_ENDPOINT"), Region: os.Getenv("VGW_REGION"), AccessKeyID: os.Getenv("VGW_ACCESS_KEY"), SecretAccessKey: os.Getenv("VGW_SECRET_KEY")}, name, "a.txt"); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	gone(t, b)
	if ok, _ := root.BucketExists(ctx, name); ok {
		t.Error("the bucket survived a forceDestroy delete")
	}
}

func TestBucketOfAnotherAccountIsNeverAdopted(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	owner := createVGWUser(t, "owner-"+ns[len(ns)-5:])
	name := bucketName(ns, "taken")
	theirs := s3Client(t, s3.Config{Endpoint: os.Getenv("VGW_ENDPOINT"), Region: os.Getenv("VGW_REGION"), AccessKeyID: owner, SecretAccessKey: vgwUserSecret})
	if err := theirs.CreateBucket(ctx, name); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = theirs.DeleteBucket(context.Background(), name) }()

	me := createVGWUser(t, "me-"+ns[len(ns)-5:])
	vgwSecret(t, ns, "mine", me, vgwUserSecret)
	b := newBucket(ns, "taken", v1alpha1.BucketParameters{BucketName: ptr.To(name), CredentialsSecretRef: &xpv2.LocalSecretReference{Name: "mine"}})
	if err := env.Kube.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "refused: taken by another account", func() error {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		if m := b.GetCondition(xpv2.TypeSynced).Message; !strings.Contains(m, "taken by another account") {
			return fmt.Errorf("Synced message %q", m)
		}
		return nil
	})
	if err := env.Kube.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	gone(t, b)
	if ok, err := theirs.BucketExists(ctx, name); err != nil || !ok {
		t.Errorf("the other account's bucket was touched: exists %v, %v", ok, err)
	}
}

func mustEqualPolicy(t *testing.T, a, b string) bool {
	t.Helper()
	eq, err := s3.PoliciesEqual(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return eq
}

// TestBucketSteadyStateCalls counts the S3 calls of steady-state polls of a bucket: ACL,
// policy and versioning reads, and nothing written.
func TestBucketSteadyStateCalls(t *testing.T) {
	t.Parallel()
	ctx := harness.Ctx(t)
	ns := newNamespace(t)
	readyContract(t, ns, "c", v1alpha1.ContractParameters{})
	vgwSecret(t, ns, "vgw", os.Getenv("VGW_ACCESS_KEY"), os.Getenv("VGW_SECRET_KEY"))

	swiftName, vgwName := bucketName(ns, "steady-swift"), bucketName(ns, "steady-vgw")
	buckets := []*v1alpha1.Bucket{
		newBucket(ns, "swift", v1alpha1.BucketParameters{BucketName: ptr.To(swiftName), ContractRef: &xpv2.Reference{Name: "c"}, CannedACL: ptr.To("private"), Versioning: ptr.To("Enabled")}),
		newBucket(ns, "vgw", v1alpha1.BucketParameters{BucketName: ptr.To(vgwName), CredentialsSecretRef: &xpv2.LocalSecretReference{Name: "vgw"}, CannedACL: ptr.To("private"), Versioning: ptr.To("Enabled"),
			Policy: &apiextensionsv1.JSON{Raw: []byte(policyFor(vgwName, os.Getenv("VGW_ACCESS_KEY"), "s3:GetObject"))}}),
	}
	for _, b := range buckets {
		if err := env.Kube.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range buckets {
		waitFor(t, b, "True", nil)
	}
	time.Sleep(2 * poll)
	_, mark := env.Requests.Since(0)
	const window = 5 * poll
	time.Sleep(window)
	reqs, _ := env.Requests.Since(mark)
	polls := int(window / poll)
	for _, name := range []string{swiftName, vgwName} {
		var reads, writes int
		for _, r := range reqs {
			if !strings.HasSuffix(r, "/"+name) {
				continue
			}
			if strings.HasPrefix(r, "GET ") {
				reads++
			} else {
				writes++
			}
		}
		t.Logf("bucket %s: %d S3 reads and %d writes over %d polls (%.1f calls per poll)", name, reads, writes, polls, float64(reads+writes)/float64(polls))
		if writes != 0 {
			t.Errorf("bucket %s: %d writes in steady state", name, writes)
		}
		if reads == 0 || reads > 3*(polls+1) {
			t.Errorf("bucket %s: %d reads over %d polls, want at most 3 per poll", name, reads, polls)
		}
	}
	for _, b := range buckets {
		if err := env.Kube.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
		gone(t, b)
	}
}
