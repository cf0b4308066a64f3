package local

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testRange is 127.0.<third>.<first>-<last>. The unit tests use 127.0.5.x (`make dev` runs its
// members in 127.0.2.x, the provider's integration tests in 127.0.4.x, this package's in
// 127.0.3.x).
func testRange(third byte, first, last byte) AddressRange {
	return AddressRange{First: netip.AddrFrom4([4]byte{127, 0, third, first}), Last: netip.AddrFrom4([4]byte{127, 0, third, last})}
}

// newUnitBackend is a backend for tests that start no real member: every address in the range
// counts as free whatever listens there, so the addresses it hands out are predictable.
func newUnitBackend(t *testing.T, o Options) *Backend {
	t.Helper()
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	b.portsFree = func(netip.Addr) bool { return true }
	return b
}

func TestPickAddress(t *testing.T) {
	a := netip.MustParseAddr
	r := AddressRange{First: a("127.0.2.1"), Last: a("127.0.2.4")}
	all := func(netip.Addr) bool { return true }
	cases := map[string]struct {
		used    map[netip.Addr]bool
		free    func(netip.Addr) bool
		want    netip.Addr
		wantErr bool
	}{
		"FirstWhenNothingIsUsed": {free: all, want: a("127.0.2.1")},
		"SkipsUsed": {
			used: map[netip.Addr]bool{a("127.0.2.1"): true, a("127.0.2.2"): true},
			free: all, want: a("127.0.2.3"),
		},
		"SkipsBusyPorts": {
			used: map[netip.Addr]bool{a("127.0.2.1"): true},
			free: func(x netip.Addr) bool { return x != a("127.0.2.2") },
			want: a("127.0.2.3"),
		},
		"LastOfTheRange": {
			used: map[netip.Addr]bool{a("127.0.2.1"): true, a("127.0.2.2"): true, a("127.0.2.3"): true},
			free: all, want: a("127.0.2.4"),
		},
		"UsedOutsideTheRangeDoesNotMatter": {
			used: map[netip.Addr]bool{a("127.0.3.1"): true},
			free: all, want: a("127.0.2.1"),
		},
		"Exhausted": {
			used:    map[netip.Addr]bool{a("127.0.2.1"): true, a("127.0.2.2"): true, a("127.0.2.3"): true},
			free:    func(x netip.Addr) bool { return x != a("127.0.2.4") },
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := pickAddress(r, tc.used, tc.free)
			if (err != nil) != tc.wantErr {
				t.Fatalf("pickAddress(...): error %v, want error: %t", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("pickAddress(...) = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAddressRangeValidate(t *testing.T) {
	a := netip.MustParseAddr
	cases := map[string]struct {
		r    AddressRange
		want bool
	}{
		"Default":     {r: DefaultAddressRange, want: true},
		"OneAddress":  {r: AddressRange{First: a("127.0.2.7"), Last: a("127.0.2.7")}, want: true},
		"Reversed":    {r: AddressRange{First: a("127.0.2.9"), Last: a("127.0.2.1")}},
		"NotLoopback": {r: AddressRange{First: a("10.0.0.1"), Last: a("10.0.0.9")}},
		"IPv6":        {r: AddressRange{First: a("::1"), Last: a("::1")}},
		"HalfEmpty":   {r: AddressRange{First: a("127.0.2.1")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.r.validate(); (err == nil) != tc.want {
				t.Errorf("validate(): %v, want valid: %t", err, tc.want)
			}
		})
	}
}

func TestPortsFree(t *testing.T) {
	addr := netip.MustParseAddr("127.0.5.250")
	if !portsFree(addr) {
		t.Fatalf("portsFree(%s) = false before anything listens there", addr)
	}
	l, err := net.Listen("tcp", netip.AddrPortFrom(addr, PeerPort).String())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if portsFree(addr) {
		t.Errorf("portsFree(%s) = true while something listens on its peer port", addr)
	}
}

func TestAllocateSkipsBusyAddress(t *testing.T) {
	busy := netip.MustParseAddr("127.0.5.200")
	l, err := net.Listen("tcp", netip.AddrPortFrom(busy, ClientPort).String())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, err := New(Options{Dir: t.TempDir(), BinariesDir: t.TempDir(), AddressRange: testRange(5, 200, 201)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.Allocate(context.Background(), "c", "m0")
	if err != nil {
		t.Fatal(err)
	}
	if m.Address != "127.0.5.201" {
		t.Errorf("Allocate got %s, want 127.0.5.201: something listens on %s:%d", m.Address, busy, ClientPort)
	}
}

func TestAllocate(t *testing.T) {
	ctx := context.Background()
	b := newUnitBackend(t, Options{Dir: t.TempDir(), BinariesDir: t.TempDir(), AddressRange: testRange(5, 1, 3)})
	m0, err := b.Allocate(ctx, "c1", "m0")
	if err != nil {
		t.Fatal(err)
	}
	want := "127.0.5.1"
	if m0.Address != want || m0.PeerURL != "https://127.0.5.1:2380" || m0.ClientURL != "https://127.0.5.1:2379" || m0.State != "Allocated" {
		t.Errorf("first machine: %+v, want %s with its URLs, Allocated", m0, want)
	}
	again, err := b.Allocate(ctx, "c1", "m0")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m0, again); diff != "" {
		t.Errorf("Allocate again: -first +again:\n%s", diff)
	}
	// Another cluster in the same Dir gets the next address.
	m1, err := b.Allocate(ctx, "c2", "m0")
	if err != nil {
		t.Fatal(err)
	}
	if m1.Address != "127.0.5.2" {
		t.Errorf("machine of another cluster got %s, want 127.0.5.2", m1.Address)
	}
	if err := b.Delete(ctx, "c1", "m0"); err != nil {
		t.Fatal(err)
	}
	// The released address is the lowest free one again.
	m2, err := b.Allocate(ctx, "c2", "m1")
	if err != nil {
		t.Fatal(err)
	}
	if m2.Address != want {
		t.Errorf("after delete got %s, want the released %s", m2.Address, want)
	}
	if _, err := b.Allocate(ctx, "c2", "m2"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Allocate(ctx, "c2", "m3"); err == nil {
		t.Error("Allocate beyond the end of the range succeeded")
	}
}

// Two backends sharing a Dir stand for two processes: the file lock, not the mutex, keeps
// them apart.
func TestAllocateConcurrently(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var bs []*Backend
	for range 2 {
		bs = append(bs, newUnitBackend(t, Options{Dir: dir, BinariesDir: t.TempDir(), AddressRange: testRange(5, 10, 40)}))
	}
	const n = 12
	addrs := make([]string, 2*n)
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		wg.Go(func() {
			m, err := bs[i%2].Allocate(ctx, fmt.Sprintf("c%d", i%3), fmt.Sprintf("m%d", i))
			addrs[i], errs[i] = m.Address, err
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for i, a := range addrs {
		if errs[i] != nil {
			t.Fatalf("Allocate %d: %v", i, errs[i])
		}
		if j, ok := seen[a]; ok {
			t.Errorf("machines %d and %d both got %s", j, i, a)
		}
		seen[a] = i
	}
}

func TestNamesMustBePathComponents(t *testing.T) {
	b := newUnitBackend(t, Options{Dir: t.TempDir(), BinariesDir: t.TempDir(), AddressRange: testRange(5, 50, 51)})
	for _, name := range []string{"", ".", "..", "../x", "a/b", ".lock", "-x"} {
		if _, err := b.Allocate(context.Background(), "c", name); err == nil {
			t.Errorf("Allocate(c, %q) succeeded", name)
		}
		if _, err := b.Allocate(context.Background(), name, "m"); err == nil {
			t.Errorf("Allocate(%q, m) succeeded", name)
		}
	}
}
