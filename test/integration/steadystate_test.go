//go:build integration

package integration

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// constantListsForSizes runs measure for each of two sizes at once, over windows of the same
// length: each must stay within the bound countSteadyLists checks, two lists a poll whatever
// the number of resources, where a read per resource would be a call per resource a poll.
// (The counts of the two sizes are not compared with each other: one resource polled alone
// finds the listing stale once a poll, many polled apart find it stale twice.)
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
	t.Logf("lists over the same window: %d for %d %s, %d for %d", lists[sizes[0]], sizes[0], what, lists[sizes[1]], sizes[1])
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
