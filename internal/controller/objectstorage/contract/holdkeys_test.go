package contract

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
)

func TestKeysFinalizer(t *testing.T) {
	s := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.SchemeBuilder.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cr := &v1alpha1.Contract{}
	cr.SetNamespace("shop")
	cr.SetName("keys")
	cr.SetUID("contract-uid")
	cr.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "keys-secret"}
	controlled := func(name, uid string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "objectstorage.m.stackservices.io/v1alpha1", Kind: "Contract", Name: "x", UID: types.UID(uid), Controller: ptr.To(true),
		}}}}
	}
	finalizers := func(kube client.Client, o client.Object) []string {
		t.Helper()
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		return o.GetFinalizers()
	}

	t.Run("HoldsTheContractsSecretUntilRemoved", func(t *testing.T) {
		ctx := context.Background()
		c := cr.DeepCopy()
		secret := controlled("keys-secret", "contract-uid")
		kube := fake.NewClientBuilder().WithScheme(s).WithObjects(c, secret).Build()
		f := newKeysFinalizer(kube)
		if err := f.AddFinalizer(ctx, c); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{keysFinalizerName}, finalizers(kube, secret)); diff != "" {
			t.Errorf("Secret's finalizers after AddFinalizer: -want, +got:\n%s", diff)
		}
		if diff := cmp.Diff([]string{managed.FinalizerName}, finalizers(kube, c)); diff != "" {
			t.Errorf("Contract's finalizers after AddFinalizer: -want, +got:\n%s", diff)
		}
		if err := f.RemoveFinalizer(ctx, c); err != nil {
			t.Fatal(err)
		}
		if got := finalizers(kube, secret); len(got) != 0 {
			t.Errorf("Secret's finalizers after RemoveFinalizer: %v, want none", got)
		}
		if got := finalizers(kube, c); len(got) != 0 {
			t.Errorf("Contract's finalizers after RemoveFinalizer: %v, want none", got)
		}
	})
	t.Run("NeverTouchesAnotherObjectsSecret", func(t *testing.T) {
		ctx := context.Background()
		c := cr.DeepCopy()
		secret := controlled("keys-secret", "someone-else")
		kube := fake.NewClientBuilder().WithScheme(s).WithObjects(c, secret).Build()
		if err := newKeysFinalizer(kube).AddFinalizer(ctx, c); err != nil {
			t.Fatal(err)
		}
		if got := finalizers(kube, secret); len(got) != 0 {
			t.Errorf("another object's Secret got finalizers %v", got)
		}
	})
	t.Run("NoSecretYet", func(t *testing.T) {
		ctx := context.Background()
		c := cr.DeepCopy()
		kube := fake.NewClientBuilder().WithScheme(s).WithObjects(c).Build()
		f := newKeysFinalizer(kube)
		if err := f.AddFinalizer(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := f.RemoveFinalizer(ctx, c); err != nil {
			t.Fatal(err)
		}
	})
}
