package local

import (
	"context"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

const (
	// ClientPort and PeerPort are etcd's standard ports, which every member can use because
	// every member has an address of its own.
	ClientPort = 2379
	PeerPort   = 2380

	errBadRange       = "the address range must go from a first to a last IPv4 loopback address (127.0.0.0/8), first <= last"
	errFmtNoAddress   = "no free address left in %s-%s: every one is allocated to a machine in the state directory or something listens on its port 2379 or 2380"
	errLock           = "cannot lock the state directory of local machines"
	errMkdirMachine   = "cannot create the directory of the local machine"
	errFmtUsedAddress = "machine %s of cluster %s has address %q, which is not an IP address"
)

// lockPoll is how often allocation retries a lock file another process holds.
const lockPoll = 10 * time.Millisecond

func (r AddressRange) validate() error {
	ok := r.First.Is4() && r.Last.Is4() && r.First.IsLoopback() && r.Last.IsLoopback() && r.First.Compare(r.Last) <= 0
	if !ok {
		return errors.New(errBadRange)
	}
	return nil
}

// Allocate reserves an address for the machine, or returns the machine if it exists already.
func (b *Backend) Allocate(ctx context.Context, cluster, name string) (machines.Machine, error) {
	if err := checkNames(cluster, name); err != nil {
		return machines.Machine{}, err
	}
	unlock, err := b.lockAllocation(ctx)
	if err != nil {
		return machines.Machine{}, err
	}
	defer unlock()

	dir := b.machineDir(cluster, name)
	r, err := readRecord(dir)
	if err == nil {
		return r.machine(machineState(r)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return machines.Machine{}, errors.Wrap(err, errRead)
	}
	used, err := usedAddresses(b.dir)
	if err != nil {
		return machines.Machine{}, err
	}
	addr, err := pickAddress(b.addresses, used, b.portsFree)
	if err != nil {
		return machines.Machine{}, err
	}
	r = newRecord(cluster, name, addr, time.Now())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return machines.Machine{}, errors.Wrap(err, errMkdirMachine)
	}
	if err := writeRecord(dir, r); err != nil {
		return machines.Machine{}, err
	}
	b.log.Debug("Allocated local machine", "cluster", cluster, "name", name, "address", r.Address)
	return r.machine(machines.Allocated), nil
}

func newRecord(cluster, name string, addr netip.Addr, now time.Time) record {
	return record{
		Cluster:   cluster,
		Name:      name,
		Address:   addr.String(),
		PeerURL:   "https://" + netip.AddrPortFrom(addr, PeerPort).String(),
		ClientURL: "https://" + netip.AddrPortFrom(addr, ClientPort).String(),
		CreatedAt: now.UTC(),
	}
}

// usedAddresses are the addresses of every machine in dir, of every cluster: machines that are
// only allocated listen on nothing yet, so probing ports cannot see them.
func usedAddresses(dir string) (map[netip.Addr]bool, error) {
	recs, err := readAll(dir)
	if err != nil {
		return nil, err
	}
	used := make(map[netip.Addr]bool, len(recs))
	for _, r := range recs {
		a, err := netip.ParseAddr(r.Address)
		if err != nil {
			return nil, errors.Wrapf(err, errFmtUsedAddress, r.Name, r.Cluster, r.Address)
		}
		used[a] = true
	}
	return used, nil
}

// pickAddress returns the first address of the range that is not used and on which free says
// the member's ports are free. The lowest one, so that a developer sees the same few
// addresses run after run.
func pickAddress(r AddressRange, used map[netip.Addr]bool, free func(netip.Addr) bool) (netip.Addr, error) {
	for a := r.First; a.IsValid() && a.Compare(r.Last) <= 0; a = a.Next() {
		if !used[a] && free(a) {
			return a, nil
		}
	}
	return netip.Addr{}, errors.Errorf(errFmtNoAddress, r.First, r.Last)
}

// portsFree binds the client and peer ports of addr for a moment: a member left running by a
// state directory that is gone (or anything else on these ports) would make the new member
// fail to start much later, with a less obvious error.
func portsFree(addr netip.Addr) bool {
	for _, p := range []uint16{ClientPort, PeerPort} {
		l, err := net.Listen("tcp", netip.AddrPortFrom(addr, p).String()) //nolint:noctx // Bound and closed at once.
		if err != nil {
			return false
		}
		_ = l.Close()
	}
	return true
}

// lockAllocation takes the in-process mutex and then an exclusive flock on Dir/.lock, so that
// neither two goroutines nor two processes sharing Dir pick an address at the same time. The
// lock file's descriptor is close-on-exec (as every file Go opens), so members started while
// it is held do not inherit the lock.
func (b *Backend) lockAllocation(ctx context.Context) (func(), error) {
	b.allocMu.Lock()
	f, err := os.OpenFile(filepath.Join(b.dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.allocMu.Unlock()
		return nil, errors.Wrap(err, errLock)
	}
	if err := flock(ctx, f); err != nil {
		_ = f.Close()
		b.allocMu.Unlock()
		return nil, errors.Wrap(err, errLock)
	}
	return func() {
		// Closing the descriptor releases the flock.
		_ = f.Close()
		b.allocMu.Unlock()
	}, nil
}

// flock polls a non-blocking flock rather than blocking in the kernel, where a cancelled
// context could not interrupt the wait.
func flock(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}
