//go:build integration

package integration

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// TestBucketAdmission checks that the API server refuses bad buckets with a message a person
// can act on, and that a bucket cannot be renamed.
func TestBucketAdmission(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	contract := &xpv2.Reference{Name: "c"}
	cases := map[string]struct {
		p    v1alpha1.BucketParameters
		want string
	}{
		"UpperCaseName":   {p: v1alpha1.BucketParameters{BucketName: ptr.To("My-Bucket"), ContractRef: contract}, want: "should match"},
		"NameTooShort":    {p: v1alpha1.BucketParameters{BucketName: ptr.To("ab"), ContractRef: contract}, want: "should be at least 3 chars long"},
		"IPAddressName":   {p: v1alpha1.BucketParameters{BucketName: ptr.To("192.168.1.10"), ContractRef: contract}, want: "not an IP address"},
		"DoubleDots":      {p: v1alpha1.BucketParameters{BucketName: ptr.To("a..b"), ContractRef: contract}, want: "no '..'"},
		"CannedAndGrants": {p: v1alpha1.BucketParameters{ContractRef: contract, CannedACL: ptr.To("private"), GrantRead: []v1alpha1.Grantee{{Type: "id", Value: "x"}}}, want: "use cannedACL or grants"},
		"UnknownGrantee":  {p: v1alpha1.BucketParameters{ContractRef: contract, GrantRead: []v1alpha1.Grantee{{Type: "user", Value: "x"}}}, want: `Unsupported value: "user"`},
		"UnknownCanned":   {p: v1alpha1.BucketParameters{ContractRef: contract, CannedACL: ptr.To("bucket-owner-read")}, want: `Unsupported value: "bucket-owner-read"`},
		"PolicyNotObject": {p: v1alpha1.BucketParameters{ContractRef: contract, Policy: &apiextensionsv1.JSON{Raw: []byte(`["not", "an", "object"]`)}}, want: "must be of type object"},
		"NoCredentials":   {p: v1alpha1.BucketParameters{}, want: "a bucket needs S3 credentials"},
		"TwoCredentials":  {p: v1alpha1.BucketParameters{ContractRef: contract, CredentialsSecretRef: &xpv2.LocalSecretReference{Name: "s"}}, want: "not both"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := env.Kube.Create(harness.Ctx(t), newBucket(ns, strings.ToLower(name), tc.p))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a refusal containing %q", err, tc.want)
			}
		})
	}

	// A bucket cannot be renamed, nor its name removed.
	b := newBucket(ns, "fixed", v1alpha1.BucketParameters{BucketName: ptr.To("fixed-name"), ContractRef: contract})
	b.Annotations = map[string]string{"crossplane.io/paused": "true"}
	if err := env.Kube.Create(harness.Ctx(t), b); err != nil {
		t.Fatal(err)
	}
	for want, change := range map[string]func(){
		"bucketName is immutable: a bucket cannot be renamed": func() { b.Spec.ForProvider.BucketName = ptr.To("other-name") },
		"bucketName is immutable: it cannot be removed":       func() { b.Spec.ForProvider.BucketName = nil },
	} {
		// The provider may touch the object (a paused condition) in between: retry conflicts.
		var err error
		for range 10 {
			if err = env.Kube.Get(harness.Ctx(t), client.ObjectKeyFromObject(b), b); err != nil {
				t.Fatal(err)
			}
			change()
			if err = env.Kube.Update(harness.Ctx(t), b); !kerrors.IsConflict(err) {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want a refusal containing %q", err, want)
		}
	}
}
