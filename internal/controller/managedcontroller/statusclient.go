package managedcontroller

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// unchangedStatusSkipper is the client of the managed reconcilers. crossplane-runtime ends every
// reconcile with a status update, also when the status is what the resource already had: at a
// steady-state poll of N resources, N requests a poll that the API server answers without
// writing anything. This client answers those updates itself.
//
// An update is skipped only when it is sure to change nothing: the object it sends carries
// the resourceVersion of the last read, that read is not older than this client's own last
// status write (a lagging cache may still hold the version before it), and the status it
// sends is the one that read returned. Every other update goes to the API server, so a
// conflict is still a conflict.
type unchangedStatusSkipper struct {
	client.Client

	mu sync.Mutex
	// seen is by namespace and name, so that the reconcile that finds an object gone (its Get
	// says NotFound, on an empty object) forgets it.
	seen map[types.NamespacedName]seenStatus
}

// seenStatus is what the client knows of one object's status.
type seenStatus struct {
	// uid tells a new object of the same name from the one seen.
	uid types.UID
	// resourceVersion and status are of the last read or write.
	resourceVersion string
	status          [sha256.Size]byte
	// written is the resourceVersion of this client's last status write, as a number; 0 if
	// it wrote none or the API server's versions are not numbers.
	written uint64
}

func newUnchangedStatusSkipper(c client.Client) *unchangedStatusSkipper {
	return &unchangedStatusSkipper{Client: c, seen: map[types.NamespacedName]seenStatus{}}
}

// statusHash is the SHA-256 of the object's status as JSON; ok is false when it has none.
// The status field is marshalled as it is: a conversion of the whole object to unstructured
// first made a tenth of everything the provider allocated while it created 1000 groups.
func statusHash(obj client.Object) ([sha256.Size]byte, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return [sha256.Size]byte{}, false
	}
	st := v.Elem().FieldByName("Status")
	if !st.IsValid() {
		return [sha256.Size]byte{}, false
	}
	b, err := json.Marshal(st.Interface())
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(b), true
}

// Get records the status of what it read.
func (c *unchangedStatusSkipper) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.forget(key)
		}
		return err
	}
	if h, ok := statusHash(obj); ok && obj.GetUID() != "" {
		c.mu.Lock()
		s := c.seen[key]
		if s.uid != obj.GetUID() {
			s = seenStatus{uid: obj.GetUID()}
		}
		s.resourceVersion, s.status = obj.GetResourceVersion(), h
		c.seen[key] = s
		c.mu.Unlock()
	}
	return nil
}

func (c *unchangedStatusSkipper) forget(key types.NamespacedName) {
	c.mu.Lock()
	delete(c.seen, key)
	c.mu.Unlock()
}

// Delete forgets the object.
func (c *unchangedStatusSkipper) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.forget(client.ObjectKeyFromObject(obj))
	return c.Client.Delete(ctx, obj, opts...)
}

// Status returns a writer whose Update skips unchanged statuses.
func (c *unchangedStatusSkipper) Status() client.SubResourceWriter {
	return &statusWriter{SubResourceWriter: c.Client.Status(), c: c}
}

type statusWriter struct {
	client.SubResourceWriter
	c *unchangedStatusSkipper
}

// unchanged reports whether writing obj's status would change nothing (see the type).
func (c *unchangedStatusSkipper) unchanged(obj client.Object, h [sha256.Size]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.seen[client.ObjectKeyFromObject(obj)]
	if !ok || s.uid != obj.GetUID() || s.resourceVersion != obj.GetResourceVersion() || s.status != h {
		return false
	}
	if s.written == 0 {
		return true
	}
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	return err == nil && rv >= s.written
}

func (w *statusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	h, ok := statusHash(obj)
	if ok && len(opts) == 0 && w.c.unchanged(obj, h) {
		return nil
	}
	if err := w.SubResourceWriter.Update(ctx, obj, opts...); err != nil {
		return err
	}
	// What the API server answered: obj now carries the version it wrote, and the status as
	// stored.
	if stored, ok := statusHash(obj); ok && obj.GetUID() != "" {
		written, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
		w.c.mu.Lock()
		w.c.seen[client.ObjectKeyFromObject(obj)] = seenStatus{uid: obj.GetUID(), resourceVersion: obj.GetResourceVersion(), status: stored, written: written}
		w.c.mu.Unlock()
	}
	return nil
}

// skippingManager hands the managed reconciler the skipping client instead of the manager's.
type skippingManager struct {
	ctrl.Manager
	client client.Client
}

func (m skippingManager) GetClient() client.Client { return m.client }
