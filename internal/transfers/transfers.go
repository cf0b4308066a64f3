// Package transfers bounds the long transfers the provider runs at once: a snapshot streaming
// from etcd into an object store, or out of one into new members. A transfer lasts as long as
// its database takes to stream through the tenant's object store, which may be slow, or stall
// on purpose. A Limiter gives each namespace (a tenant) one transfer at a time and the provider
// a few in all, so that one tenant's transfers never hold what everyone else's need.
package transfers

import (
	"context"
	"sync"
)

// InReconcile is how many transfers reconciles run at once (an EtcdCluster restoring, an
// EtcdBackup taking its snapshot), well below a controller's workers: the others always
// reconcile, whatever a tenant's object store does.
const InReconcile = 3

// A Limiter hands out turns: one per namespace at a time, and at most its number of slots in
// all. The zero value is not usable; call New.
type Limiter struct {
	slots chan struct{}

	mu         sync.Mutex
	namespaces map[string]*turn
}

// A turn is a namespace's one transfer at a time; users counts who holds or waits for it, so
// that the map forgets namespaces nobody uses.
type turn struct {
	ch    chan struct{}
	users int
}

// New returns a Limiter of the given number of slots (at least 1).
func New(slots int) *Limiter {
	return &Limiter{slots: make(chan struct{}, max(slots, 1)), namespaces: map[string]*turn{}}
}

// Slots is how many transfers may run at once.
func (l *Limiter) Slots() int { return cap(l.slots) }

// Acquire waits for the namespace's turn, then for a slot, and returns the function that gives
// both back. It fails only when ctx is done first. The turn comes first: a namespace never
// holds more than one slot, waiting or not.
func (l *Limiter) Acquire(ctx context.Context, namespace string) (release func(), err error) {
	t := l.join(namespace)
	select {
	case t.ch <- struct{}{}:
	case <-ctx.Done():
		l.leave(namespace, t, false)
		return nil, ctx.Err()
	}
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		l.leave(namespace, t, true)
		return nil, ctx.Err()
	}
	return l.releaser(namespace, t), nil
}

// TryAcquire takes the namespace's turn and a slot if both are free now, for callers that must
// not wait (a reconcile that waits holds one of its controller's workers).
func (l *Limiter) TryAcquire(namespace string) (release func(), ok bool) {
	t := l.join(namespace)
	select {
	case t.ch <- struct{}{}:
	default:
		l.leave(namespace, t, false)
		return nil, false
	}
	select {
	case l.slots <- struct{}{}:
	default:
		l.leave(namespace, t, true)
		return nil, false
	}
	return l.releaser(namespace, t), true
}

func (l *Limiter) releaser(namespace string, t *turn) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			<-l.slots
			l.leave(namespace, t, true)
		})
	}
}

func (l *Limiter) join(namespace string) *turn {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.namespaces[namespace]
	if !ok {
		t = &turn{ch: make(chan struct{}, 1)}
		l.namespaces[namespace] = t
	}
	t.users++
	return t
}

// leave gives the turn back if held, and forgets the namespace when nobody else holds or
// waits for its turn.
func (l *Limiter) leave(namespace string, t *turn, held bool) {
	if held {
		<-t.ch
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.users--; t.users == 0 {
		delete(l.namespaces, namespace)
	}
}
