//go:build integration

package integration

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// constantListsForSizes runs measure for each of two sizes at once, over windows of the same
// length, and fails unless the larger made as many lists as the smaller, give or take a poll's
// two: what one poll of resources in sync costs does not grow with their number. measure
// returns the lists it counted (see countSteadyLists).
func constantListsForSizes(t *testing.T, what string, sizes [2]int, measure func(t *testing.T, n int) int) {
	t.Helper()
	lists := map[int]int{}
	var mu sync.Mutex
	// Run returns when both are done.
	t.Run("Sizes", func(t *testing.T) {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s%d", what, n), func(t *testing.T) {
				t.Parallel()
				got := measure(t, n)
				mu.Lock()
				lists[n] = got
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return
	}
	if small, large := lists[sizes[0]], lists[sizes[1]]; large > small+2 {
		t.Errorf("lists over the same window: %d for %d %s, %d for %d %s: want the same, give or take a poll's two", small, sizes[0], what, large, sizes[1], what)
	}
}

// countSteadyLists lets the reconciles that follow creation settle, then counts the requests
// of one session (its Keystone token: other tests' sessions call Neutron meanwhile) over a few
// polls. It fails on any request other than list, and unless the lists are between one (the
// resources were observed in the window; under the whole suite's load a poll can come late,
// and a CI run saw 3 lists in 5 polls) and two a poll (the listing may be half a poll old).
func countSteadyLists(t *testing.T, what, token, list string) int {
	t.Helper()
	time.Sleep(3 * poll)
	_, mark := env.Requests.Since(0)
	const window = 5 * poll
	time.Sleep(window)
	lists, other := 0, []string{}
	for _, r := range env.Requests.OfToken(mark, token) {
		if r == list {
			lists++
			continue
		}
		other = append(other, r)
	}
	polls := int(window / poll)
	t.Logf("%s in sync, %d polls: %d lists (%s) and %v", what, polls, lists, list, other)
	if len(other) > 0 {
		t.Errorf("%s in sync made calls other than the list in %d polls: %v", what, polls, other)
	}
	if lists < 1 || lists > 2*polls+1 {
		t.Errorf("%s in sync, %d polls: %d lists, want between 1 and %d", what, polls, lists, 2*polls+1)
	}
	return lists
}
