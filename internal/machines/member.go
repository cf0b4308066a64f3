package machines

import (
	"strconv"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errNoVersion     = "the member configuration names no etcd version"
	errNoInitial     = "the member configuration has no initial cluster"
	errNoToken       = "the member configuration has no initial cluster token"
	errNoTLS         = "the member configuration lacks the CA certificate, the member certificate or its key"
	errFmtState      = "the initial cluster state must be new or existing, not %q"
	errNegativeQuota = "the backend quota cannot be negative"
	errBadRestore    = "the snapshot to restore needs a URL, a size and a SHA-256"
	errRestoreJoin   = "only the members of a new cluster are restored from a snapshot; a joining member gets its data from the cluster"
)

// Validate refuses a configuration no backend can start a member with.
func (c MemberConfig) Validate() error {
	switch {
	case c.Version == "":
		return errors.New(errNoVersion)
	case c.InitialCluster == "":
		return errors.New(errNoInitial)
	case c.InitialClusterState != "new" && c.InitialClusterState != "existing":
		return errors.Errorf(errFmtState, c.InitialClusterState)
	case c.InitialClusterToken == "":
		return errors.New(errNoToken)
	case len(c.CA) == 0 || len(c.Cert) == 0 || len(c.Key) == 0:
		return errors.New(errNoTLS)
	case c.QuotaBackendBytes < 0:
		return errors.New(errNegativeQuota)
	case c.Restore != nil && (c.Restore.URL == "" || c.Restore.Size <= 0 || len(c.Restore.SHA256) != 64):
		return errors.New(errBadRestore)
	case c.Restore != nil && c.InitialClusterState != "new":
		return errors.New(errRestoreJoin)
	}
	return nil
}

// MemberPaths are where a member's files are on its machine.
type MemberPaths struct {
	DataDir, CA, Cert, Key string
}

// Args are the flags of a member, whatever machine it runs on: TLS with client certificates
// required on both the client and the peer port. Every flag is spelled the same in etcd 3.5,
// 3.6 and 3.7, and in the --flag=value form, which etcd's flag parser reads for booleans too.
func (c MemberConfig) Args(name, peerURL, clientURL string, p MemberPaths) []string {
	args := []string{
		"--name=" + name,
		"--data-dir=" + p.DataDir,
		"--listen-peer-urls=" + peerURL,
		"--listen-client-urls=" + clientURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--advertise-client-urls=" + clientURL,
		"--initial-cluster=" + c.InitialCluster,
		"--initial-cluster-state=" + c.InitialClusterState,
		"--initial-cluster-token=" + c.InitialClusterToken,
		"--cert-file=" + p.Cert,
		"--key-file=" + p.Key,
		"--trusted-ca-file=" + p.CA,
		"--client-cert-auth=true",
		"--peer-cert-file=" + p.Cert,
		"--peer-key-file=" + p.Key,
		"--peer-trusted-ca-file=" + p.CA,
		"--peer-client-cert-auth=true",
	}
	if c.QuotaBackendBytes > 0 {
		args = append(args, "--quota-backend-bytes="+strconv.FormatInt(c.QuotaBackendBytes, 10))
	}
	if c.AutoCompactionMode != "" {
		args = append(args, "--auto-compaction-mode="+c.AutoCompactionMode)
	}
	if c.AutoCompactionRetention != "" {
		args = append(args, "--auto-compaction-retention="+c.AutoCompactionRetention)
	}
	if c.SnapshotCount > 0 {
		args = append(args, "--snapshot-count="+strconv.FormatUint(c.SnapshotCount, 10))
	}
	return args
}
