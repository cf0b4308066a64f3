package openstack

import (
	"context"
	"slices"
	"sync"
	"time"
)

// A snapshot holds one list of a project's resources (security groups, ports), by key, made
// again once it is older than maxAge, one list at a time. It is the shared core of the
// session's listings: polling N resources costs a constant number of lists per poll interval
// instead of N reads. A key written by this provider since the list was asked for is not
// served from it (the caller reads it on its own), unless the write told what it now is.
type snapshot[V any] struct {
	maxAge time.Duration
	now    func() time.Time
	list   func(ctx context.Context) (map[string]V, error)
	clone  func(V) V

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
}

func newSnapshot[V any](maxAge time.Duration, list func(context.Context) (map[string]V, error), clone func(V) V) *snapshot[V] {
	return &snapshot[V]{maxAge: maxAge, now: time.Now, list: list, clone: clone, written: map[string]time.Time{}, known: map[string]V{}}
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

		byKey, err := s.list(ctx)

		s.mu.Lock()
		// A failed list leaves every key to its own read until maxAge has passed: the
		// observations go on, at the price they had without a listing.
		if err != nil {
			byKey = nil
		}
		s.byKey, s.listedAt, s.listing = byKey, asked, nil
		for key, w := range s.written {
			if w.Before(asked) {
				delete(s.written, key)
				delete(s.known, key)
			}
		}
		s.mu.Unlock()
		close(done)
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
	return &GroupListing{snapshot: newSnapshot(maxAge, byID, clone), get: get}
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
		return m, nil
	}
	clone := func(ps []Port) []Port {
		out := slices.Clone(ps)
		for i := range out {
			out[i].SecurityGroups = slices.Clone(out[i].SecurityGroups)
		}
		return out
	}
	return &PortListing{snapshot: newSnapshot(maxAge, byDevice, clone), ofDevices: ofDevices}
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
