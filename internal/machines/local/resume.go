package local

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const errFmtResume = "cannot restart the member of local machine %s of cluster %s"

// Resume starts again, with the command line they last ran, the members whose process is gone:
// what a machine's init system does after a reboot. The provider calls it once when it starts,
// because local members stop with the host (or `make dev-down`) and nothing else brings them
// back; a member that dies while the provider runs is left dead, for the EtcdCluster to
// replace. With clusters named, only their members are started. It returns how many members
// it started.
func (b *Backend) Resume(ctx context.Context, clusters ...string) (int, error) {
	all, err := readAll(b.dir)
	if err != nil {
		return 0, err
	}
	started := 0
	for _, r := range all {
		if r.PID == 0 || len(r.Command) == 0 || isOurs(r) {
			continue
		}
		if len(clusters) > 0 && !slices.Contains(clusters, r.Cluster) {
			continue
		}
		if err := b.resume(ctx, r); err != nil {
			return started, errors.Wrapf(err, errFmtResume, r.Name, r.Cluster)
		}
		started++
	}
	return started, nil
}

func (b *Backend) resume(ctx context.Context, r record) error {
	unlock := b.lockMachine(r.Cluster, r.Name)
	defer unlock()
	if cur, err := b.read(r.Cluster, r.Name); err == nil && isOurs(cur) {
		// Started by someone else meanwhile (a reconcile's Start).
		return nil
	}
	dir := b.machineDir(r.Cluster, r.Name)
	exited, err := launch(dir, &r)
	if err != nil {
		return err
	}
	b.log.Info("Restarted etcd member", "cluster", r.Cluster, "name", r.Name, "pid", r.PID, "dir", filepath.Base(dir))
	return watchEarlyExit(ctx, exited, dir)
}
