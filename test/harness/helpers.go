package harness

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

func localKey(name, key string) *xpv2.LocalSecretKeySelector {
	return &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: name}, Key: key}
}

// Eventually calls check until it returns nil or the timeout passes, then fails the test with
// the last error.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = check(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s: %v", what, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ConditionIs returns nil if the resource has the condition with the status.
func ConditionIs(c resource.Conditioned, ct xpv2.ConditionType, want string) error {
	got := c.GetCondition(ct)
	if string(got.Status) != want {
		return fmt.Errorf("condition %s is %q (reason %q, message %q), want %q", ct, got.Status, got.Reason, got.Message, want)
	}
	return nil
}

// Ctx returns a context that ends with the test.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

// Mutate reads obj by key, applies fn and updates it, retrying when the provider changed the
// object in between.
func (e *Env) Mutate(t testing.TB, key client.ObjectKey, obj client.Object, fn func()) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.Kube.Get(Ctx(t), key, obj); err != nil {
			return err
		}
		fn()
		return e.Kube.Update(Ctx(t), obj)
	})
	if err != nil {
		t.Fatalf("cannot update %s: %v", key, err)
	}
}
