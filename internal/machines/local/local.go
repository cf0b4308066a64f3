// Package local runs etcd members as processes on the provider's own host: the machines
// backend of development (`make dev`) and of the integration tests.
//
// Every machine gets its own loopback address from a range (127.0.2.1-127.0.2.254 unless told
// otherwise). Linux routes all of 127.0.0.0/8 to lo, so every member listens on etcd's standard
// ports, 2379 for clients and 2380 for peers, and a member's URLs look like a real host's.
//
// Everything the backend knows lives on disk under Options.Dir, one directory per machine:
//
//	<Dir>/<cluster>/<name>/machine.json  the machine, the pid and the command line it runs
//	<Dir>/<cluster>/<name>/data/         etcd's data directory
//	<Dir>/<cluster>/<name>/tls/          ca.crt, member.crt and member.key
//	<Dir>/<cluster>/<name>/etcd.log      etcd's stdout and stderr
//	<Dir>/<cluster>/<name>/etcd.pid      the pid, for scripts (cluster/lib/members.sh)
//
// so that a provider that restarts finds its machines, and its members, again. Members run in
// their own session: they outlive the provider, which is what a real machine does too.
package local

import (
	"context"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

const (
	errNoDir           = "local machines need a state directory"
	errNoBinariesDir   = "local machines need a directory of etcd binaries"
	errMkdir           = "cannot create the state directory of local machines"
	errAbs             = "cannot make the path absolute"
	errRead            = "cannot read the local machine"
	errNotStarted      = "the local machine was never started"
	errFmtNotAllocated = "there is no local machine %s of cluster %s: allocate it first"
	errFmtNotRunning   = "the etcd member of local machine %s of cluster %s is not running"
	errFmtPurge        = "cannot delete local machine %s of cluster %s"
)

// DefaultAddressRange is where machines get their addresses unless told otherwise. It stays
// clear of 127.0.0.1 and 127.0.1.1, which other services and /etc/hosts use.
var DefaultAddressRange = AddressRange{
	First: netip.MustParseAddr("127.0.2.1"),
	Last:  netip.MustParseAddr("127.0.2.254"),
}

// An AddressRange is the inclusive range of loopback addresses machines get theirs from.
type AddressRange struct {
	First, Last netip.Addr
}

// Options configure the local backend.
type Options struct {
	// Dir holds the state of every machine. Backends (in one process or several) that share it
	// also share its addresses and never hand out the same one twice.
	Dir string
	// BinariesDir holds one directory per etcd version, v3.6.16/etcd, as cluster/tools.sh
	// caches them (3.6.16/etcd is accepted too).
	BinariesDir string
	// AddressRange is where addresses come from (zero: DefaultAddressRange). Backends with
	// different Dirs should use different ranges: only machines in the same Dir are known to
	// each other before their members start listening.
	AddressRange AddressRange
	// Log receives what the backend does (nil: nothing).
	Log logging.Logger
}

// Backend is the local machines backend.
type Backend struct {
	dir         string
	binariesDir string
	addresses   AddressRange
	log         logging.Logger
	// portsFree says whether nothing listens on an address's member ports; tests replace it so
	// that members other processes run do not change which address they get.
	portsFree func(netip.Addr) bool

	// allocMu serializes address allocation in this process; the lock file Dir/.lock does the
	// same between processes.
	allocMu sync.Mutex
	// machineMu guards machineLocks, which serialize Start and Delete of one machine.
	machineMu    sync.Mutex
	machineLocks map[string]*sync.Mutex
}

var _ machines.Machines = &Backend{}

// New returns a backend that keeps its state in o.Dir, creating the directory if needed.
func New(o Options) (*Backend, error) {
	if o.Dir == "" {
		return nil, errors.New(errNoDir)
	}
	if o.BinariesDir == "" {
		return nil, errors.New(errNoBinariesDir)
	}
	r := o.AddressRange
	if r == (AddressRange{}) {
		r = DefaultAddressRange
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	// Absolute paths, because they end up in the members' command lines, which the alive
	// check compares and which must not depend on the provider's working directory.
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, errors.Wrap(err, errAbs)
	}
	bin, err := filepath.Abs(o.BinariesDir)
	if err != nil {
		return nil, errors.Wrap(err, errAbs)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errors.Wrap(err, errMkdir)
	}
	log := o.Log
	if log == nil {
		log = logging.NewNopLogger()
	}
	return &Backend{
		dir: dir, binariesDir: bin, addresses: r, log: log, portsFree: portsFree,
		machineLocks: map[string]*sync.Mutex{},
	}, nil
}

// List returns the machines of the cluster, sorted by name.
func (b *Backend) List(_ context.Context, cluster string) ([]machines.Machine, error) {
	if err := checkName("cluster", cluster); err != nil {
		return nil, err
	}
	recs, err := readCluster(filepath.Join(b.dir, cluster))
	if err != nil {
		return nil, err
	}
	out := make([]machines.Machine, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.machine(machineState(r)))
	}
	return out, nil
}

// PID is the process ID of the machine's running member. It is an error when the member does
// not run: a stale pid may belong to an unrelated process by now, and tests kill what PID
// returns.
func (b *Backend) PID(cluster, name string) (int, error) {
	r, err := b.read(cluster, name)
	if err != nil {
		return 0, err
	}
	if !isOurs(r) {
		return 0, errors.Errorf(errFmtNotRunning, name, cluster)
	}
	return r.PID, nil
}

// Purge deletes every machine of every cluster under Dir, in parallel: it is what cleans up
// after tests and `make dev-down`, where waiting for members one by one adds up.
func (b *Backend) Purge(ctx context.Context) error {
	recs, err := readAll(b.dir)
	if err != nil {
		return err
	}
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, r := range recs {
		wg.Go(func() {
			if err := b.Delete(ctx, r.Cluster, r.Name); err != nil {
				errs[i] = errors.Wrapf(err, errFmtPurge, r.Name, r.Cluster)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	removeEmptyClusterDirs(b.dir)
	return nil
}

// read returns the machine's record, with an error that says to allocate it when there is none.
func (b *Backend) read(cluster, name string) (record, error) {
	if err := checkNames(cluster, name); err != nil {
		return record{}, err
	}
	r, err := readRecord(b.machineDir(cluster, name))
	if errors.Is(err, fs.ErrNotExist) {
		return record{}, errors.Errorf(errFmtNotAllocated, name, cluster)
	}
	return r, errors.Wrap(err, errRead)
}

// machineState is what the machine is now: a member that was started and no longer runs is
// Stopped.
func machineState(r record) machines.State {
	switch {
	case r.PID == 0:
		return machines.Allocated
	case isOurs(r):
		return machines.Running
	default:
		return machines.Stopped
	}
}

func (b *Backend) machineDir(cluster, name string) string {
	return filepath.Join(b.dir, cluster, name)
}

// lockMachine serializes Start and Delete of one machine, so that a member is never started
// twice or started while it is being deleted.
func (b *Backend) lockMachine(cluster, name string) func() {
	key := cluster + "/" + name
	b.machineMu.Lock()
	mu, ok := b.machineLocks[key]
	if !ok {
		mu = &sync.Mutex{}
		b.machineLocks[key] = mu
	}
	b.machineMu.Unlock()
	mu.Lock()
	return mu.Unlock
}
