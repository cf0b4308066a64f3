package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// A scenario is one kind of managed resource measured at scale next to its floor: what the
// provider is given (N managed resources), and the same external resources made by a plain
// program with the minimal API calls, at the same concurrency.
type scenario interface {
	// name keys the scenario in the results and names its plot (benchmarks-<name>.svg).
	name() string
	// unit says what one of N is, for logs and the plot.
	unit() string
	// backend is the label (of stackservices_backend_requests_total) of the calls counted.
	backend() string
	// resource is the API resource whose writes are counted.
	resource() schema.GroupResource
	// prepare makes what n managed resources, and the floor, need (servers, say).
	prepare(ctx context.Context, n int) error
	// object is the i-th managed resource.
	object(i int) client.Object
	// newList is a list of the managed resources.
	newList() resource.ManagedList
	// floor makes the n external resources directly, concurrency at once, then undoes them.
	// It returns the time and the backend calls the making took.
	floor(ctx context.Context, n, concurrency int) (time.Duration, int64, error)
	// cleanup removes what prepare made.
	cleanup(ctx context.Context) error
}

// countingTransport counts the floor's requests (not its logins).
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.URL.Path, "/tokens") {
		t.n.Add(1)
	}
	return t.next.RoundTrip(r)
}

// A drifter changes k of the provider's external resources by hand, as someone might, and
// measures how long the provider takes to put each back: drift must be seen within a poll.
type drifter interface {
	// drift returns the longest time from a change to its repair.
	drift(ctx context.Context, kube client.Client, k int, timeout time.Duration) (time.Duration, error)
}

// driftedResources is how many resources a drift measurement changes.
const driftedResources = 10

// waitRepaired polls repaired for each of k changes made at changed[i] and returns the
// longest time until it said true.
func waitRepaired(ctx context.Context, changed []time.Time, timeout time.Duration, repaired func(ctx context.Context, i int) (bool, error)) (time.Duration, error) {
	var (
		mu      sync.Mutex
		longest time.Duration
	)
	err := parallel(len(changed), len(changed), func(i int) error {
		deadline := changed[i].Add(timeout)
		for {
			ok, err := repaired(ctx, i)
			if err != nil {
				return err
			}
			if ok {
				d := time.Since(changed[i])
				mu.Lock()
				longest = max(longest, d)
				mu.Unlock()
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("change %d not repaired in %s", i, timeout)
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
	return longest, err
}
