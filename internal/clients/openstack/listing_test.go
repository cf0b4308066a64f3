package openstack

import (
	"context"
	"errors"
	"fmt"
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
	l.Wrote("b", nil)
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

// TestGroupListingServesWhatAWriteTold: a group whose create told all of it is observed as
// told, without a GET, until a list asked for after the write; a failed write tells nothing.
func TestGroupListingServesWhatAWriteTold(t *testing.T) {
	ctx := context.Background()
	n := &fakeNeutron{groups: map[string]SecurityGroup{}}
	l := NewGroupListing(time.Minute, n.list, n.get)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	if _, err := l.Observe(ctx, "none"); err == nil {
		t.Fatal("a group Neutron does not have was observed")
	}

	created := SecurityGroup{ID: "new", Rules: []Rule{{ID: "r1"}}, Tags: []string{"t"}}
	n.set(created)
	now = now.Add(time.Second)
	l.Wrote("new", &created)
	created.Rules[0].ID = "changed by the writer"
	got, err := l.Observe(ctx, "new")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(SecurityGroup{ID: "new", Rules: []Rule{{ID: "r1"}}, Tags: []string{"t"}}, *got); diff != "" {
		t.Errorf("observed after the create: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"none"}, n.gets); diff != "" {
		t.Errorf("GETs: -want, +got:\n%s", diff)
	}

	// A later write that failed part way tells nothing: the group is read.
	now = now.Add(time.Second)
	l.Wrote("new", nil)
	if _, err := l.Observe(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"none", "new"}, n.gets); diff != "" {
		t.Errorf("GETs after a failed write: -want, +got:\n%s", diff)
	}

	// The next list holds the group: served from it, what the write told forgotten.
	n.set(SecurityGroup{ID: "new", Description: "listed"})
	now = now.Add(time.Minute + time.Second)
	if got, err := l.Observe(ctx, "new"); err != nil || got.Description != "listed" {
		t.Errorf("after the next list: %+v, %v; want the listed group", got, err)
	}
	if n.lists != 2 || len(n.gets) != 2 {
		t.Errorf("%d lists and GETs %v, want 2 lists and no more GETs", n.lists, n.gets)
	}
}

// fakePorts lists a project's ports and the ports of devices, counting the calls.
type fakePorts struct {
	ports      []Port
	lists      int
	ofDevices  [][]string
	listFails  bool
	devicesErr error
}

func (f *fakePorts) list(context.Context) ([]Port, error) {
	f.lists++
	if f.listFails {
		return nil, errors.New("503 Service Unavailable")
	}
	return append([]Port(nil), f.ports...), nil
}

func (f *fakePorts) devices(_ context.Context, ids []string) ([]Port, error) {
	f.ofDevices = append(f.ofDevices, ids)
	if f.devicesErr != nil {
		return nil, f.devicesErr
	}
	var out []Port
	for _, p := range f.ports {
		if slices.Contains(ids, p.DeviceID) {
			out = append(out, p)
		}
	}
	return out, nil
}

// TestPortListing: the ports of servers come from one list per maxAge, however many servers
// and observations; a server written since the list, or not in it, is read with the others
// of its observation in one call.
func TestPortListing(t *testing.T) {
	ctx := context.Background()
	f := &fakePorts{}
	var servers []string
	for i := range 50 {
		srv := fmt.Sprintf("srv-%02d", i)
		servers = append(servers, srv)
		f.ports = append(f.ports, Port{ID: "p-" + srv, DeviceID: srv, SecurityGroups: []string{"ccm"}})
	}
	f.ports = append(f.ports, Port{ID: "dhcp", DeviceOwner: "network:dhcp"})
	l := NewPortListing(time.Minute, f.list, f.devices)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	ports := func(ids ...string) []string {
		t.Helper()
		ps, err := l.PortsOfDevices(ctx, ids)
		if err != nil {
			t.Fatalf("PortsOfDevices(%v): %v", ids, err)
		}
		out := make([]string, 0, len(ps))
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}

	for range 3 {
		if got := ports(servers...); len(got) != 50 {
			t.Fatalf("%d ports of 50 servers, want 50", len(got))
		}
		ports(servers[:10]...)
	}
	if f.lists != 1 || len(f.ofDevices) != 0 {
		t.Errorf("six observations of up to 50 servers: %d lists and reads %v, want 1 list and none", f.lists, f.ofDevices)
	}

	// Written servers and servers the list lacks are read together, once.
	f.ports[3].SecurityGroups = []string{"ccm", "web"}
	l.Wrote("srv-03")
	f.ports = append(f.ports, Port{ID: "p-srv-new", DeviceID: "srv-new"})
	if diff := cmp.Diff([]string{"p-srv-02", "p-srv-03", "p-srv-new"}, ports("srv-02", "srv-03", "srv-new")); diff != "" {
		t.Errorf("ports: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"srv-03", "srv-new"}}, f.ofDevices); diff != "" {
		t.Errorf("servers read on their own: -want, +got:\n%s", diff)
	}

	// The next list serves them all again.
	now = now.Add(time.Minute + time.Second)
	ports("srv-02", "srv-03", "srv-new")
	if f.lists != 2 || len(f.ofDevices) != 1 {
		t.Errorf("after maxAge: %d lists and %d reads, want 2 and 1", f.lists, len(f.ofDevices))
	}

	// The caller's copy is its own.
	ps, _ := l.PortsOfDevices(ctx, []string{"srv-03"})
	ps[0].SecurityGroups[0] = "changed"
	if diff := cmp.Diff([]string{"p-srv-03"}, ports("srv-03")); diff != "" {
		t.Fatal(diff)
	}
	if ps, _ := l.PortsOfDevices(ctx, []string{"srv-03"}); ps[0].SecurityGroups[0] != "ccm" {
		t.Error("a change to observed ports reached the listing")
	}

	// A failed list leaves the servers to their own read until maxAge has passed; a failed
	// read is the observation's error.
	f.listFails = true
	now = now.Add(time.Minute + time.Second)
	ports("srv-01")
	if f.lists != 3 || len(f.ofDevices) != 2 {
		t.Errorf("failed list: %d lists and %d reads, want 3 and 2", f.lists, len(f.ofDevices))
	}
	f.devicesErr = errors.New("500")
	if _, err := l.PortsOfDevices(ctx, []string{"srv-01"}); err == nil {
		t.Error("a failed read of ports was no error")
	}
}

// TestListingTellsWatchersOfDrift: a new list tells the watchers of each key that changed
// (another revision), appeared or went since the one before, but not of keys this provider
// wrote meanwhile, nor anyone once forgotten.
func TestListingTellsWatchersOfDrift(t *testing.T) {
	ctx := context.Background()
	n := &fakeNeutron{groups: map[string]SecurityGroup{}}
	for _, id := range []string{"a", "b", "c"} {
		n.set(SecurityGroup{ID: id, RevisionNumber: 1})
	}
	l := NewGroupListing(time.Minute, n.list, n.get)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	told := map[string]int{}
	tell := func(who string) func() { return func() { told[who]++ } }
	relist := func() {
		t.Helper()
		now = now.Add(time.Minute + time.Second)
		if _, err := l.Observe(ctx, "c"); err != nil {
			t.Fatal(err)
		}
	}
	l.Watch("x", []string{"a"}, tell("x"))
	l.Watch("y", []string{"b"}, tell("y"))
	l.Watch("z", []string{"new"}, tell("z"))
	relist()
	if len(told) != 0 {
		t.Errorf("the first list told %v: nothing to compare with", told)
	}

	n.set(SecurityGroup{ID: "a", RevisionNumber: 2})
	n.set(SecurityGroup{ID: "b", RevisionNumber: 2})
	l.Wrote("b", nil)
	n.set(SecurityGroup{ID: "c", RevisionNumber: 2})
	n.set(SecurityGroup{ID: "new", RevisionNumber: 1})
	relist()
	if diff := cmp.Diff(map[string]int{"x": 1, "z": 1}, told); diff != "" {
		t.Errorf("told after drift of a, our write of b and a new group: -want, +got:\n%s", diff)
	}

	relist()
	if diff := cmp.Diff(map[string]int{"x": 1, "z": 1}, told); diff != "" {
		t.Errorf("told after a list without change: -want, +got:\n%s", diff)
	}

	// A group gone tells its watchers; a forgotten watcher is told nothing, and watching
	// again replaces what a watcher watched.
	n.mu.Lock()
	delete(n.groups, "a")
	delete(n.groups, "new")
	n.mu.Unlock()
	n.set(SecurityGroup{ID: "b", RevisionNumber: 3})
	l.Forget("z")
	l.Watch("y", []string{"c"}, tell("y"))
	relist()
	if diff := cmp.Diff(map[string]int{"x": 2, "z": 1}, told); diff != "" {
		t.Errorf("told after a and new went and b changed: -want, +got:\n%s", diff)
	}

	// A failed list tells nothing, and neither does the good list after it (nothing to
	// compare with).
	n.listFails = true
	relist()
	n.listFails = false
	n.set(SecurityGroup{ID: "c", RevisionNumber: 9})
	relist()
	if diff := cmp.Diff(map[string]int{"x": 2, "z": 1}, told); diff != "" {
		t.Errorf("told around a failed list: -want, +got:\n%s", diff)
	}
}

// TestPortListingTellsOfAServersPorts: a server's ports changed when one of them did, or one
// came or went, whatever order Neutron lists them in.
func TestPortListingTellsOfAServersPorts(t *testing.T) {
	ctx := context.Background()
	f := &fakePorts{ports: []Port{
		{ID: "p2", DeviceID: "srv", RevisionNumber: 1},
		{ID: "p1", DeviceID: "srv", RevisionNumber: 1},
		{ID: "q1", DeviceID: "other", RevisionNumber: 1},
	}}
	l := NewPortListing(time.Minute, f.list, f.devices)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	told := 0
	l.Watch("att", []string{"srv"}, func() { told++ })
	relist := func() {
		t.Helper()
		now = now.Add(time.Minute + time.Second)
		if _, err := l.PortsOfDevices(ctx, []string{"srv"}); err != nil {
			t.Fatal(err)
		}
	}
	relist()
	f.ports[0], f.ports[1] = f.ports[1], f.ports[0]
	f.ports[2].RevisionNumber = 2
	relist()
	if told != 0 {
		t.Errorf("told %d times of the same ports in another order, or of another server", told)
	}
	f.ports[0].RevisionNumber = 2
	relist()
	f.ports = append(f.ports, Port{ID: "p3", DeviceID: "srv"})
	relist()
	if told != 2 {
		t.Errorf("told %d times, want 2: a port changed, then one came", told)
	}
}
