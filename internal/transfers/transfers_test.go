package transfers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTryAcquire: a namespace gets one turn at a time, the provider its slots, and whatever is
// released is free again.
func TestTryAcquire(t *testing.T) {
	type step struct {
		acquire string // a namespace to try; "" releases the first turn still held
		want    bool
	}
	cases := map[string]struct {
		slots int
		steps []step
	}{
		"OnePerNamespace":   {slots: 3, steps: []step{{"a", true}, {"a", false}, {"b", true}}},
		"SlotsBoundAll":     {slots: 2, steps: []step{{"a", true}, {"b", true}, {"c", false}}},
		"ReleasedIsFree":    {slots: 1, steps: []step{{"a", true}, {"b", false}, {"", true}, {"b", true}, {"a", false}}},
		"RefusedHoldsNone":  {slots: 2, steps: []step{{"a", true}, {"a", false}, {"a", false}, {"b", true}}},
		"AtLeastOneSlot":    {slots: 0, steps: []step{{"a", true}, {"b", false}}},
		"NamespaceReturned": {slots: 2, steps: []step{{"a", true}, {"", true}, {"a", true}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := New(tc.slots)
			var held []func()
			var got, want []bool
			for _, s := range tc.steps {
				want = append(want, s.want)
				if s.acquire == "" {
					held[0]()
					held = held[1:]
					got = append(got, true)
					continue
				}
				release, ok := l.TryAcquire(s.acquire)
				got = append(got, ok)
				if ok {
					held = append(held, release)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("turns: -want +got:\n%s", diff)
			}
			for _, r := range held {
				r()
				r() // Twice is harmless.
			}
			if n := len(l.namespaces); n != 0 {
				t.Errorf("%d namespaces remembered after every turn was given back, want none", n)
			}
		})
	}
}

// TestAcquireWaitsForItsTurn: a namespace's second transfer waits for its first, while another
// namespace's goes ahead; a wait ends with its context.
func TestAcquireWaitsForItsTurn(t *testing.T) {
	l := New(2)
	ctx := context.Background()
	first, err := l.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan func())
	go func() {
		r, err := l.Acquire(ctx, "a")
		if err != nil {
			t.Error(err)
		}
		second <- r
	}()
	other, err := l.Acquire(ctx, "b")
	if err != nil {
		t.Fatalf("namespace b waits behind namespace a: %v", err)
	}
	select {
	case <-second:
		t.Fatal("namespace a got a second turn while its first was held")
	case <-time.After(50 * time.Millisecond):
	}
	first()
	select {
	case r := <-second:
		r()
	case <-time.After(5 * time.Second):
		t.Fatal("namespace a's second transfer did not get its turn once the first was given back")
	}

	// Both slots taken (b, and now c): d's wait ends with its context, holding nothing.
	c, err := l.Acquire(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(wctx, "d"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire with every slot taken: %v, want the context's deadline", err)
	}
	other()
	c()
	if n := len(l.namespaces); n != 0 {
		t.Errorf("%d namespaces remembered after every turn was given back, want none", n)
	}
}
