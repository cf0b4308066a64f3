package config

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/v1alpha1"
)

// recordingQueue records what is added to it, at once or later.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added []string
}

func (q *recordingQueue) Add(r reconcile.Request) { q.added = append(q.added, r.String()+" now") }
func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.added = append(q.added, r.String()+" after "+d.String())
}

// TestUsagesAreCountedAfterABurst: a change of a usage enqueues the config it names a second
// later (requests for one config meanwhile are one), never at once.
func TestUsagesAreCountedAfterABurst(t *testing.T) {
	usage := func(kind, name string) *v1alpha1.ProviderConfigUsage {
		u := &v1alpha1.ProviderConfigUsage{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "u"}}
		u.SetProviderConfigReference(xpv2.ProviderConfigReference{Kind: kind, Name: name})
		return u
	}
	h := coalescing{&resource.EnqueueRequestForProviderConfig{Kind: v1alpha1.ProviderConfigKind}}
	q := &recordingQueue{}
	h.Create(context.Background(), event.CreateEvent{Object: usage("ProviderConfig", "default")}, q)
	h.Delete(context.Background(), event.DeleteEvent{Object: usage("ProviderConfig", "default")}, q)
	h.Create(context.Background(), event.CreateEvent{Object: usage("ClusterProviderConfig", "platform")}, q)
	want := []string{
		types.NamespacedName{Namespace: "app", Name: "default"}.String() + " after 1s",
		types.NamespacedName{Namespace: "app", Name: "default"}.String() + " after 1s",
	}
	if diff := cmp.Diff(want, q.added); diff != "" {
		t.Errorf("requests: -want, +got:\n%s", diff)
	}
}
