package openstack

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeNeutron lists and gets groups, counting the calls.
type fakeNeutron struct {
	mu         sync.Mutex
	groups     map[string]SecurityGroup
	lists      int
	gets       []string
	listFails  bool
	listBlocks chan struct{}
}

func (f *fakeNeutron) list(context.Context) ([]SecurityGroup, error) {
	if f.listBlocks != nil {
		<-f.listBlocks
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.listFails {
		return nil, errors.New("403 Forbidden")
	}
	out := make([]SecurityGroup, 0, len(f.groups))
	for _, sg := range f.groups {
		out = append(out, sg)
	}
	return out, nil
}

func (f *fakeNeutron) get(_ context.Context, id string) (*SecurityGroup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets = append(f.gets, id)
	sg, ok := f.groups[id]
	if !ok {
		return nil, errors.New("404")
	}
	return &sg, nil
}

func (f *fakeNeutron) set(sg SecurityGroup) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groups[sg.ID] = sg
}

// TestGroupListing: observations come from one list per maxAge, whatever the number of
// groups; a group written since the list, or missing from it, is read on its own.
func TestGroupListing(t *testing.T) {
	ctx := context.Background()
	n := &fakeNeutron{groups: map[string]SecurityGroup{}}
	for _, id := range []string{"a", "b", "c"} {
		n.set(SecurityGroup{ID: id, Rules: []Rule{{ID: id + "-r1"}}})
	}
	l := NewGroupListing(time.Minute, n.list, n.get)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	observe := func(id string) *SecurityGroup {
		t.Helper()
		sg, err := l.Observe(ctx, id)
		if err != nil {
			t.Fatalf("Observe(%s): %v", id, err)
		}
		return sg
	}

	for range 3 {
		for _, id := range []string{"a", "b", "c"} {
			observe(id)
		}
	}
	if n.lists != 1 || len(n.gets) != 0 {
		t.Errorf("nine observations of three groups: %d lists and GETs %v, want 1 list and none", n.lists, n.gets)
	}

	// Drift in Neutron shows once the listing is older than maxAge.
	n.set(SecurityGroup{ID: "a", Rules: []Rule{{ID: "a-r1"}, {ID: "a-r2"}}})
	if got := observe("a"); len(got.Rules) != 1 {
		t.Errorf("within maxAge: %d rules, want the listed 1", len(got.Rules))
	}
	now = now.Add(time.Minute + time.Second)
	if got := observe("a"); len(got.Rules) != 2 {
		t.Errorf("after maxAge: %d rules, want the 2 Neutron has", len(got.Rules))
	}

	// Our own write: the group is read on its own until a list asked for after the write.
	now = now.Add(time.Second)
	n.set(SecurityGroup{ID: "b", Description: "updated"})
	l.Wrote("b")
	if got := observe("b"); got.Description != "updated" {
		t.Errorf("after our write: %q, want the written group", got.Description)
	}
	// A group made since the list is not in it.
	n.set(SecurityGroup{ID: "d"})
	observe("d")
	if diff := cmp.Diff([]string{"b", "d"}, n.gets); diff != "" {
		t.Errorf("GETs: -want, +got:\n%s", diff)
	}
	now = now.Add(time.Minute + time.Second)
	observe("b")
	observe("d")
	if len(n.gets) != 2 || n.lists != 3 {
		t.Errorf("after the next list: %d lists and GETs %v, want 3 lists and no more GETs", n.lists, n.gets)
	}

	// The caller's copy is its own.
	observe("a").Rules[0].ID = "changed"
	if observe("a").Rules[0].ID != "a-r1" {
		t.Error("a change to an observed group reached the listing")
	}

	// A list that fails leaves each group to its own GET until maxAge has passed.
	n.listFails = true
	now = now.Add(time.Minute + time.Second)
	observe("a")
	observe("c")
	if n.lists != 4 || len(n.gets) != 4 {
		t.Errorf("failed list: %d lists and %d GETs, want 4 and 4", n.lists, len(n.gets))
	}
}

// TestGroupListingListsOnceForConcurrentObservations: observations that find the listing
// stale at the same time wait for one list.
func TestGroupListingListsOnceForConcurrentObservations(t *testing.T) {
	n := &fakeNeutron{groups: map[string]SecurityGroup{"a": {ID: "a"}}, listBlocks: make(chan struct{})}
	l := NewGroupListing(time.Minute, n.list, n.get)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := l.Observe(context.Background(), "a"); err != nil {
				t.Error(err)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	close(n.listBlocks)
	wg.Wait()
	if n.lists != 1 || len(n.gets) != 0 {
		t.Errorf("ten concurrent observations: %d lists and %d GETs, want 1 and 0", n.lists, len(n.gets))
	}
}

// TestGroupListingTellsWatchersOfDrift: while groups are watched, the listing lists again when
// stale without being asked, and tells the watchers of a group whose revision changed or
// that is gone, but not of a group this provider wrote; with no watcher left, or when nothing
// uses it any more, it stops.
func TestGroupListingTellsWatchersOfDrift(t *testing.T) {
	const maxAge = 20 * time.Millisecond
	f := &fakeNeutron{groups: map[string]SecurityGroup{
		"a": {ID: "a", RevisionNumber: 1}, "b": {ID: "b", RevisionNumber: 1}, "c": {ID: "c", RevisionNumber: 1},
	}}
	l := NewGroupListing(maxAge, f.list, f.get)
	told := make(chan string, 16)
	watch := func() {
		for _, id := range []string{"a", "b", "c"} {
			l.Watch(id, "ns/"+id, func() { told <- id })
		}
	}
	watch()
	// lists waits until the listing has listed n more times.
	lists := func(n int) {
		t.Helper()
		f.mu.Lock()
		want := f.lists + n
		f.mu.Unlock()
		deadline := time.Now().Add(5 * time.Second)
		for {
			f.mu.Lock()
			got := f.lists
			f.mu.Unlock()
			if got >= want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the listing listed %d times in 5s, want %d more: it does not refresh on its own", got, n)
			}
			watch() // In use, as the resources' polls keep it.
			time.Sleep(maxAge / 4)
		}
	}
	// drain returns the watchers told since the last drain, sorted.
	drain := func() []string {
		var out []string
		for {
			select {
			case id := <-told:
				out = append(out, id)
			default:
				slices.Sort(out)
				return out
			}
		}
	}

	lists(3)
	if got := drain(); len(got) != 0 {
		t.Errorf("nothing changed, yet %v were told", got)
	}

	f.set(SecurityGroup{ID: "a", RevisionNumber: 2})
	f.mu.Lock()
	delete(f.groups, "b")
	f.mu.Unlock()
	l.Wrote("c")
	f.set(SecurityGroup{ID: "c", RevisionNumber: 2})
	lists(2)
	if diff := cmp.Diff([]string{"a", "b"}, drain()); diff != "" {
		t.Errorf("told (-want +got):\n%s", diff)
	}

	stops := func(why string) {
		t.Helper()
		time.Sleep((idleAfter + 2) * maxAge)
		f.mu.Lock()
		stopped := f.lists
		f.mu.Unlock()
		time.Sleep(5 * maxAge)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.lists != stopped {
			t.Errorf("%s, the listing listed %d more times", why, f.lists-stopped)
		}
	}
	// Watched, but unused (its session was replaced).
	stops("unused")

	watch()
	lists(1)
	for _, id := range []string{"a", "b", "c"} {
		l.Forget(id, "ns/"+id)
	}
	stops("with nothing watched")
}
