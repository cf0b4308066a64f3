package openstack

import (
	"context"
	"errors"
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
