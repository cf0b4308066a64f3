package securitygroupattachment

import (
	"context"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
)

const (
	errGetKubeconfig   = "cannot read the kubeconfig Secret of spec.forProvider.kubeconfigSecretRef"
	errFmtNoKubeconfig = "the Secret %s has no key %q"
	errParseKubeconfig = "cannot use the kubeconfig of spec.forProvider.kubeconfigSecretRef"
	errListAttachments = "cannot list SecurityGroupAttachments for a Node event"
)

// enqueueForNode reconciles, when a node appears, changes labels or its server identity, or
// goes away, the attachments whose selector matched it before or matches it now, and those
// that recorded it. Only attachments of the local cluster's nodes are concerned.
func enqueueForNode(kube client.Reader) handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], nodes ...*corev1.Node) {
		l := &v1alpha1.SecurityGroupAttachmentList{}
		if err := kube.List(ctx, l); err != nil {
			// The next poll catches up; nothing better to do from an event handler.
			return
		}
		for _, a := range l.Items {
			if affects(&a, nodes...) {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}})
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if n, ok := e.Object.(*corev1.Node); ok {
				enqueue(ctx, q, n)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, ok1 := e.ObjectOld.(*corev1.Node)
			n, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 || !nodeIdentityChanged(o, n) {
				// Heartbeats update nodes every few seconds: ignore all but what matters here.
				return
			}
			enqueue(ctx, q, o, n)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if n, ok := e.Object.(*corev1.Node); ok {
				enqueue(ctx, q, n)
			}
		},
	}
}

// canWatchNodes asks the API server whether the provider may list and watch Nodes. A watch it
// may not make would keep the controller's cache from ever syncing.
func canWatchNodes(ctx context.Context, cfg *rest.Config) bool {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false
	}
	for _, verb := range []string{"list", "watch"} {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "nodes"}},
		}, metav1.CreateOptions{})
		if err != nil || !r.Status.Allowed {
			return false
		}
	}
	return true
}

func nodeIdentityChanged(o, n *corev1.Node) bool {
	return !labels.Equals(o.Labels, n.Labels) ||
		o.Spec.ProviderID != n.Spec.ProviderID ||
		o.Status.NodeInfo.SystemUUID != n.Status.NodeInfo.SystemUUID
}

func affects(a *v1alpha1.SecurityGroupAttachment, nodes ...*corev1.Node) bool {
	p := a.Spec.ForProvider
	if p.KubeconfigSecretRef != nil {
		return false
	}
	for _, n := range nodes {
		for _, s := range a.Status.AtProvider.Servers {
			if s.NodeName == n.Name {
				return true
			}
		}
		if p.NodeSelector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(p.NodeSelector)
		if err == nil && sel.Matches(labels.Set(n.Labels)) {
			return true
		}
	}
	return false
}

// remoteClusters keeps one client per workload-cluster kubeconfig, rebuilt when the Secret
// changes, so that reconciles do not repeat API discovery.
type remoteClusters struct {
	kube    client.Reader
	mu      sync.Mutex
	clients map[string]remoteClient
}

type remoteClient struct {
	fingerprint string
	reader      client.Reader
}

func newRemoteClusters(kube client.Reader) *remoteClusters {
	return &remoteClusters{kube: kube, clients: map[string]remoteClient{}}
}

func (r *remoteClusters) reader(ctx context.Context, namespace string, ref xpv2.LocalSecretKeySelector) (client.Reader, error) {
	s := &corev1.Secret{}
	if err := r.kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, s); err != nil {
		return nil, errors.Wrap(err, errGetKubeconfig)
	}
	data, ok := s.Data[ref.Key]
	if !ok {
		return nil, errors.Errorf(errFmtNoKubeconfig, namespace+"/"+ref.Name, ref.Key)
	}
	key := namespace + "/" + ref.Name + "/" + ref.Key
	fp := openstack.Fingerprint(data)

	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[key]; ok && c.fingerprint == fp {
		return c.reader, nil
	}
	cfg, err := tenantRESTConfig(data)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, errors.Wrap(err, errParseKubeconfig)
	}
	r.clients[key] = remoteClient{fingerprint: fp, reader: c}
	return c, nil
}
