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
type GroupListing struct {
	maxAge time.Duration
	now    func() time.Time
	list   func(ctx context.Context) ([]SecurityGroup, error)
	get    func(ctx context.Context, id string) (*SecurityGroup, error)

	mu sync.Mutex
	// listedAt is when the current list was asked for: what it holds is at least that fresh.
	listedAt time.Time
	byID     map[string]SecurityGroup
	// written are the groups written since some list, and when the write ended.
	written map[string]time.Time
	// listing is closed when the list in flight ends; nil when none is.
	listing chan struct{}
}

// NewGroupListing returns a listing that lists with list and reads one group with get.
func NewGroupListing(maxAge time.Duration, list func(context.Context) ([]SecurityGroup, error), get func(context.Context, string) (*SecurityGroup, error)) *GroupListing {
	return &GroupListing{maxAge: maxAge, now: time.Now, list: list, get: get, written: map[string]time.Time{}}
}

// Observe returns the group with its rules, from the listing when it is fresh enough.
func (l *GroupListing) Observe(ctx context.Context, id string) (*SecurityGroup, error) {
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
		l.byID, l.listedAt, l.listing = byID, asked, nil
		for id, w := range l.written {
			if w.Before(asked) {
				delete(l.written, id)
			}
		}
		l.mu.Unlock()
		close(done)
		return nil
	}
}
