package openstack

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A snapshot holds one list of a project's resources (security groups, ports), by key, made
// again once it is older than maxAge, one list at a time. It is the shared core of the
// session's listings: polling N resources costs a constant number of lists per poll interval
// instead of N reads. A key written by this provider since the list was asked for is not
// served from it (the caller reads it on its own), unless the write told what it now is.
//
// Served from a list up to maxAge old, a poll would see drift up to maxAge late. So a new list
// is also compared with the one before: the watchers of each key whose revision changed, that
// appeared or that is gone are told at once (but not of keys this provider wrote meanwhile:
// their writers look at them anyway). The lists are made when an observation finds the
// snapshot stale, as before, so drift costs no call of its own and is seen within a poll.
type snapshot[V any] struct {
	maxAge time.Duration
	now    func() time.Time
	list   func(ctx context.Context) (map[string]V, error)
	clone  func(V) V
	// revision tells whether a key changed between two lists.
	revision func(V) string

	mu sync.Mutex
	// listedAt is when the current list was asked for: what it holds is at least that fresh.
	listedAt time.Time
	byKey    map[string]V
	// written are the keys written since some list, and when the write ended.
	written map[string]time.Time
	// known are the keys of written whose write told what they are now.
	known map[string]V
	// listing is closed when the list in flight ends; nil when none is.
	listing chan struct{}
	// listed is whether the current list succeeded: only two good lists tell what changed.
	listed bool
	// watchers are told of a change of a key: by key, the watchers' callbacks by watcher;
	// watching is the keys of each watcher.
	watchers map[string]map[string]func()
	watching map[string][]string
}

// listTimeout bounds one list (the HTTP client bounds each exchange too).
const listTimeout = 2 * time.Minute

func newSnapshot[V any](maxAge time.Duration, list func(context.Context) (map[string]V, error), clone func(V) V, revision func(V) string) *snapshot[V] {
	return &snapshot[V]{
		maxAge: maxAge, now: time.Now, list: list, clone: clone, revision: revision,
		written: map[string]time.Time{}, known: map[string]V{},
		watchers: map[string]map[string]func(){}, watching: map[string][]string{},
	}
}

// Watch asks for notify to be called when a later list shows one of the keys changed,
// appeared or gone, in place of what the watcher watched before. notify is called from the
// goroutine that listed and must not block.
func (s *snapshot[V]) Watch(watcher string, keys []string, notify func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(watcher)
	for _, k := range keys {
		if s.watchers[k] == nil {
			s.watchers[k] = map[string]func(){}
		}
		s.watchers[k][watcher] = notify
	}
	s.watching[watcher] = slices.Clone(keys)
}

// Forget ends the watcher's watch.
func (s *snapshot[V]) Forget(watcher string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(watcher)
}

func (s *snapshot[V]) forgetLocked(watcher string) {
	for _, k := range s.watching[watcher] {
		delete(s.watchers[k], watcher)
		if len(s.watchers[k]) == 0 {
			delete(s.watchers, k)
		}
	}
	delete(s.watching, watcher)
}

// changedLocked returns the callbacks of the watchers of every key the new list shows
// changed since the last one, but those written since. Call it with mu held.
func (s *snapshot[V]) changedLocked(now map[string]V) []func() {
	var out []func()
	for k, ws := range s.watchers {
		before, was := s.byKey[k]
		after, is := now[k]
		if was == is && (!was || s.revision(before) == s.revision(after)) {
			continue
		}
		if _, wrote := s.written[k]; wrote {
			continue
		}
		for _, notify := range ws {
			out = append(out, notify)
		}
	}
	return out
}

// lookup returns the key's value from the list when no write since makes it stale (or from
// what the write told), a copy the caller may change; ok is false when the caller must read
// the key on its own.
func (s *snapshot[V]) lookup(key string) (v V, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok = s.byKey[key]
	if w, wrote := s.written[key]; wrote && !w.Before(s.listedAt) {
		v, ok = s.known[key]
	}
	if ok {
		v = s.clone(v)
	}
	return v, ok
}

// wrote records a write of the key that has just ended: until a list asked for after now, the
// key is read on its own, or, when now is not nil, served as *now (the snapshot keeps a copy).
func (s *snapshot[V]) wrote(key string, now *V) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written[key] = s.now()
	delete(s.known, key)
	if now != nil {
		s.known[key] = s.clone(*now)
	}
}

// refresh lists again when the snapshot is older than maxAge; one list at a time, which the
// others wait for.
func (s *snapshot[V]) refresh(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.now().Sub(s.listedAt) <= s.maxAge {
			s.mu.Unlock()
			return nil
		}
		if wait := s.listing; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		done := make(chan struct{})
		s.listing = done
		asked := s.now()
		s.mu.Unlock()

		// The list serves every resource of the session: it is not cut short when the
		// reconcile that happened to ask for it ends.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listTimeout)
		byKey, err := s.list(lctx)
		cancel()

		s.mu.Lock()
		// A failed list leaves every key to its own read until maxAge has passed: the
		// observations go on, at the price they had without a listing.
		if err != nil {
			byKey = nil
		}
		var notify []func()
		if err == nil && s.listed {
			notify = s.changedLocked(byKey)
		}
		s.byKey, s.listedAt, s.listing, s.listed = byKey, asked, nil, err == nil
		for key, w := range s.written {
			if w.Before(asked) {
				delete(s.written, key)
				delete(s.known, key)
			}
		}
		s.mu.Unlock()
		close(done)
		for _, n := range notify {
			n()
		}
		return nil
	}
}

// A GroupListing serves the observation of security groups from one list of the project's
// groups (their rules included), shared by every resource of a session. A group not in the
// list (made since, or gone), or written by this provider since the list was asked for, is
// read on its own, so an observation never misses our own writes; and writes are decided on
// the GET that Update makes first. A write whose answers told the whole group (a create: the
// group and its rules as Neutron returned them) leaves that group instead, so the
// observation that follows a create costs no GET.
type GroupListing struct {
	*snapshot[SecurityGroup]
	get func(ctx context.Context, id string) (*SecurityGroup, error)
}

// NewGroupListing returns a listing that lists with list, again when older than maxAge, and
// reads one group with get.
func NewGroupListing(maxAge time.Duration, list func(context.Context) ([]SecurityGroup, error), get func(context.Context, string) (*SecurityGroup, error)) *GroupListing {
	byID := func(ctx context.Context) (map[string]SecurityGroup, error) {
		groups, err := list(ctx)
		if err != nil {
			return nil, err
		}
		m := make(map[string]SecurityGroup, len(groups))
		for _, sg := range groups {
			m[sg.ID] = sg
		}
		return m, nil
	}
	clone := func(sg SecurityGroup) SecurityGroup {
		sg.Rules, sg.Tags = slices.Clone(sg.Rules), slices.Clone(sg.Tags)
		return sg
	}
	revision := func(sg SecurityGroup) string { return strconv.FormatInt(sg.RevisionNumber, 10) }
	return &GroupListing{snapshot: newSnapshot(maxAge, byID, clone, revision), get: get}
}

// Observe returns the group with its rules, from the listing when it is fresh enough.
func (l *GroupListing) Observe(ctx context.Context, id string) (*SecurityGroup, error) {
	if err := l.refresh(ctx); err != nil {
		return nil, err
	}
	if sg, ok := l.lookup(id); ok {
		return &sg, nil
	}
	return l.get(ctx, id)
}

// Wrote records that the provider has just written the group: until a list asked for after
// now, it is read on its own, or, when now is not nil, observed as now (what the write's
// answers said the group is). Call it once the write has ended, whatever its outcome, with
// now nil unless every call of the write succeeded.
func (l *GroupListing) Wrote(id string, now *SecurityGroup) { l.wrote(id, now) }

// A PortListing serves the ports of servers from one list of the project's ports, shared by
// every attachment of a session, so that polling attachments over N servers costs a constant
// number of lists. A server with no port in the list (made since, or a port gone), or one
// whose ports this provider wrote since the list was asked for, has its ports listed on its
// own. Port writes carry the revision they were decided on (If-Match), so a stale listing
// never overwrites a change: Neutron refuses the write and the port is read again.
type PortListing struct {
	*snapshot[[]Port]
	ofDevices func(ctx context.Context, deviceIDs []string) ([]Port, error)
}

// NewPortListing returns a listing that lists the project's ports with list, again when older
// than maxAge, and the ports of servers it cannot serve with ofDevices.
func NewPortListing(maxAge time.Duration, list func(context.Context) ([]Port, error), ofDevices func(context.Context, []string) ([]Port, error)) *PortListing {
	byDevice := func(ctx context.Context) (map[string][]Port, error) {
		ports, err := list(ctx)
		if err != nil {
			return nil, err
		}
		m := map[string][]Port{}
		for _, p := range ports {
			if p.DeviceID != "" {
				m[p.DeviceID] = append(m[p.DeviceID], p)
			}
		}
		// In a stable order, so that two lists of the same ports have the same revision.
		for _, ps := range m {
			slices.SortFunc(ps, func(a, b Port) int { return strings.Compare(a.ID, b.ID) })
		}
		return m, nil
	}
	clone := func(ps []Port) []Port {
		out := slices.Clone(ps)
		for i := range out {
			out[i].SecurityGroups = slices.Clone(out[i].SecurityGroups)
		}
		return out
	}
	// A server's ports changed when one of them did, or one came or went.
	revision := func(ps []Port) string {
		var b strings.Builder
		for _, p := range ps {
			fmt.Fprintf(&b, "%s@%d,", p.ID, p.RevisionNumber)
		}
		return b.String()
	}
	return &PortListing{snapshot: newSnapshot(maxAge, byDevice, clone, revision), ofDevices: ofDevices}
}

// PortsOfDevices returns the ports of the servers, from the listing where it is fresh enough
// and with one read (ListPortsOfDevices) for the others.
func (l *PortListing) PortsOfDevices(ctx context.Context, deviceIDs []string) ([]Port, error) {
	if err := l.refresh(ctx); err != nil {
		return nil, err
	}
	var out []Port
	var unknown []string
	for _, id := range deviceIDs {
		if ps, ok := l.lookup(id); ok {
			out = append(out, ps...)
			continue
		}
		unknown = append(unknown, id)
	}
	if len(unknown) == 0 {
		return out, nil
	}
	read, err := l.ofDevices(ctx, unknown)
	if err != nil {
		return nil, err
	}
	return append(out, read...), nil
}

// Wrote records that the provider has just written a port of the server: until a list asked
// for after now, the server's ports are read on their own. Call it once the write has ended,
// whatever its outcome.
func (l *PortListing) Wrote(deviceID string) { l.wrote(deviceID, nil) }
