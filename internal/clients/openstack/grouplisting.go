package openstack

import (
	"context"
	"sync"
	"time"
)

// A GroupListing serves the observation of security groups from one list of the project's
// groups (their rules included), shared by every resource of a session and made again once it
// is older than maxAge: polling N groups then costs a constant number of lists per poll
// interval instead of N GETs. A group not in the list (made since, or gone), or written by
// this provider since the list was asked for, is read on its own, so an observation never
// misses our own writes; and writes are decided on the GET that Update makes first.
//
// A poll that reads a listing up to maxAge old would see drift up to maxAge later than a poll
// that reads Neutron, so the listing also looks for drift itself: while groups are watched, it
// lists again as soon as it is stale, whether or not anything observes, and tells the
// watchers of every group whose revision changed or that is gone (but those this provider
// wrote meanwhile). Drift is then seen within maxAge and a list, not within a poll plus maxAge.
type GroupListing struct {
	maxAge time.Duration
	now    func() time.Time
	list   func(ctx context.Context) ([]SecurityGroup, error)
	get    func(ctx context.Context, id string) (*SecurityGroup, error)

	mu sync.Mutex
	// listedAt is when the current list was asked for: what it holds is at least that fresh.
	listedAt time.Time
	byID     map[string]SecurityGroup
	// listed is whether the last list succeeded: only two good lists tell what changed.
	listed bool
	// written are the groups written since some list, and when the write ended.
	written map[string]time.Time
	// listing is closed when the list in flight ends; nil when none is.
	listing chan struct{}
	// watchers are told of a change of a group: by group ID, then by the watcher's key.
	watchers map[string]map[string]func()
	// refreshing is true while the goroutine that lists when the listing is stale runs.
	refreshing bool
	// used is when the listing was last observed from or watched: a listing nothing uses
	// any more (its session was replaced, say) stops listing on its own.
	used time.Time
}

// idleAfter is how many maxAge periods without use stop a listing's own refreshes: two polls,
// as maxAge is half a poll.
const idleAfter = 4

// NewGroupListing returns a listing that lists with list and reads one group with get.
func NewGroupListing(maxAge time.Duration, list func(context.Context) ([]SecurityGroup, error), get func(context.Context, string) (*SecurityGroup, error)) *GroupListing {
	return &GroupListing{maxAge: maxAge, now: time.Now, list: list, get: get, written: map[string]time.Time{}, watchers: map[string]map[string]func(){}}
}

// Watch asks for notify to be called (from another goroutine; it must not block) when the
// group changes in Neutron or disappears, until Forget. key tells the watchers of one group
// apart; watching again under the same key replaces the callback. The first watch starts
// the listing's own refreshes, which stop when nothing is watched any more.
func (l *GroupListing) Watch(id, key string, notify func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watchers[id] == nil {
		l.watchers[id] = map[string]func(){}
	}
	l.watchers[id][key] = notify
	l.used = l.now()
	if !l.refreshing && l.maxAge > 0 {
		l.refreshing = true
		go l.refreshWhileWatched()
	}
}

// Forget ends the watch of Watch(id, key).
func (l *GroupListing) Forget(id, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.watchers[id], key)
	if len(l.watchers[id]) == 0 {
		delete(l.watchers, id)
	}
}

// refreshWhileWatched lists again each time the listing turns stale, for as long as any group
// is watched and the listing is in use. A list that fails is tried again a maxAge later.
func (l *GroupListing) refreshWhileWatched() {
	for {
		l.mu.Lock()
		if len(l.watchers) == 0 || l.now().Sub(l.used) > idleAfter*l.maxAge {
			l.refreshing = false
			l.mu.Unlock()
			return
		}
		wait := l.listedAt.Add(l.maxAge).Sub(l.now())
		l.mu.Unlock()
		// A little past the deadline, so that the listing is stale when refresh looks.
		time.Sleep(max(wait, 0) + time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), max(l.maxAge, time.Minute))
		_ = l.refresh(ctx)
		cancel()
	}
}

// Observe returns the group with its rules, from the listing when it is fresh enough.
func (l *GroupListing) Observe(ctx context.Context, id string) (*SecurityGroup, error) {
	l.mu.Lock()
	l.used = l.now()
	l.mu.Unlock()
	if err := l.refresh(ctx); err != nil {
		return nil, err
	}
	l.mu.Lock()
	sg, listed := l.byID[id]
	w, wrote := l.written[id]
	listedAt := l.listedAt
	l.mu.Unlock()
	if listed && (!wrote || w.Before(listedAt)) {
		sg.Rules = append([]Rule(nil), sg.Rules...)
		sg.Tags = append([]string(nil), sg.Tags...)
		return &sg, nil
	}
	return l.get(ctx, id)
}

// Wrote records that the provider has just written the group: until a list asked for after
// now, it is read on its own. Call it once the write has ended, whatever its outcome.
func (l *GroupListing) Wrote(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.written[id] = l.now()
}

// changedLocked returns the callbacks of the watchers of every group that the new list shows
// changed (another revision) or gone since the previous successful list. Groups this provider
// wrote since are left out: their writers look at them anyway. Call it with mu held.
func (l *GroupListing) changedLocked(now map[string]SecurityGroup) []func() {
	var out []func()
	for id, ws := range l.watchers {
		before, was := l.byID[id]
		after, is := now[id]
		if !was && !is {
			continue
		}
		if was && is && before.RevisionNumber == after.RevisionNumber {
			continue
		}
		if _, wrote := l.written[id]; wrote {
			continue
		}
		for _, n := range ws {
			out = append(out, n)
		}
	}
	return out
}

// refresh lists again when the listing is older than maxAge; one list at a time, which the
// others wait for.
func (l *GroupListing) refresh(ctx context.Context) error {
	for {
		l.mu.Lock()
		if l.now().Sub(l.listedAt) <= l.maxAge {
			l.mu.Unlock()
			return nil
		}
		if wait := l.listing; wait != nil {
			l.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		done := make(chan struct{})
		l.listing = done
		asked := l.now()
		l.mu.Unlock()

		groups, err := l.list(ctx)

		l.mu.Lock()
		// A failed list leaves every group to its own GET until maxAge has passed: the
		// observations go on, at the price they had without a listing.
		byID := make(map[string]SecurityGroup, len(groups))
		if err == nil {
			for _, sg := range groups {
				byID[sg.ID] = sg
			}
		}
		var notify []func()
		if err == nil && l.listed {
			notify = l.changedLocked(byID)
		}
		l.byID, l.listedAt, l.listing, l.listed = byID, asked, nil, err == nil
		for id, w := range l.written {
			if w.Before(asked) {
				delete(l.written, id)
			}
		}
		l.mu.Unlock()
		close(done)
		for _, n := range notify {
			n()
		}
		return nil
	}
}
