// Package machines is where etcd members run. An EtcdCluster's members each get a machine:
// something with a network address that runs one etcd process with a given configuration.
//
// The interface is shaped so that two very different backends fit it:
//
//   - local: processes on the provider's own host, each on its own 127.0.0.x address (for
//     development and tests; see package local).
//   - openstack: Allocate creates a Neutron port (the fixed IP is the member's address, known
//     before the member joins the cluster), Start boots a Nova server on that port whose
//     cloud-init user-data writes the certificates and the etcd configuration and starts etcd,
//     Delete deletes the server and the port, List reads the ports and servers tagged with the
//     cluster's identity (see package openstack).
//
// Allocating the address before starting is what makes a join safe: the member is added to the
// etcd membership (as a learner) with its peer URL, and only then started with a configuration
// that names every member of the cluster, itself included.
package machines

import (
	"context"
	"errors"
	"time"
)

// ErrDisabled is returned by a backend the provider was not started with.
var ErrDisabled = errors.New("this machine backend is disabled in this provider")

// State is what a backend knows of a machine.
type State string

const (
	// Allocated machines have an address but run nothing yet.
	Allocated State = "Allocated"
	// Running machines run their etcd process (which may still be unhealthy).
	Running State = "Running"
	// Stopped machines were started but their process is gone (crashed, killed, host down).
	Stopped State = "Stopped"
)

// A Machine runs (or will run) one etcd member.
type Machine struct {
	// Cluster is the identity of the cluster the machine belongs to (the managed resource's UID).
	Cluster string
	// Name is unique within the cluster; it is also the etcd member's name.
	Name string
	// Address is the IP address the member listens on.
	Address string
	// PeerURL and ClientURL are the member's URLs (https, on Address).
	PeerURL   string
	ClientURL string
	// Version is the etcd version the machine runs (or will run), without a leading "v": 3.6.16.
	Version string
	State   State
	// CreatedAt is when the machine was allocated.
	CreatedAt time.Time
	// CertNotAfter is when the certificate the member was started with expires (zero until
	// started).
	CertNotAfter time.Time
	// BootingUntil: a started machine may still be booting until then (a server builds,
	// its OS boots, cloud-init starts etcd), so its member is not counted unhealthy before
	// it. Zero: the member runs as soon as the machine is started (a process).
	BootingUntil time.Time
	// Server is the machine as a cloud reports it (nil for backends without servers).
	Server *Server
}

// Server is what a cloud says of a machine's server: a person reads it in the cluster's
// status when a member does not come up.
type Server struct {
	ID, Host, Zone, Status string
	// Fault is the cloud's message of a server that failed (Nova's fault).
	Fault string
}

// MemberConfig is how a machine's etcd member is configured. Every member serves TLS to peers
// and clients, and requires client certificates signed by the cluster's CA on both.
type MemberConfig struct {
	// Version of etcd to run, without a leading "v": 3.6.16.
	Version string
	// InitialCluster is etcd's --initial-cluster: name=peerURL for every member, this one
	// included.
	InitialCluster string
	// InitialClusterState is "new" when bootstrapping and "existing" when joining.
	InitialClusterState string
	// InitialClusterToken keeps members of different clusters from ever joining each other.
	InitialClusterToken string
	// CA is the cluster CA's certificate (PEM); Cert and Key (PEM) are the member's certificate,
	// used both as server and as peer certificate.
	CA, Cert, Key []byte
	// CertNotAfter is when Cert expires; the backend records it on the machine.
	CertNotAfter time.Time
	// QuotaBackendBytes is etcd's --quota-backend-bytes (0: etcd's default).
	QuotaBackendBytes int64
	// AutoCompactionMode ("periodic" or "revision") and AutoCompactionRetention are etcd's
	// --auto-compaction-mode and --auto-compaction-retention (empty: etcd's defaults).
	AutoCompactionMode      string
	AutoCompactionRetention string
	// SnapshotCount is etcd's --snapshot-count (0: etcd's default).
	SnapshotCount uint64
	// Restore, when set, is the snapshot the member's data is restored from before it first
	// starts (a member that has data keeps it). Every member of a restored cluster gets the
	// same snapshot and InitialClusterState "new".
	Restore *RestoreSource
}

// A RestoreSource is a snapshot a new member restores its data from. It carries no
// credentials: a machine fetches the snapshot from a URL that grants reading that one object
// for a short while (an S3 pre-signed URL), and refuses anything but the bytes the provider
// checked.
type RestoreSource struct {
	// URL reads the snapshot, without credentials, until it expires. It is a secret while it
	// lasts: backends never log or store it.
	URL string
	// Size and SHA256 (hex) of the snapshot at URL.
	Size   int64
	SHA256 string
	// AgeIdentity, when set, decrypts the snapshot at URL (an age-encrypted backup). It is a
	// secret: backends never log or store it.
	AgeIdentity string
	// Checked waits for the provider's check of the snapshot (whole, against its checksum) and
	// returns its verdict. A backend must have it return nil before it starts anything from the
	// snapshot; one that fetches the snapshot itself may fetch meanwhile (the check and the
	// downloads overlap), one that cannot calls it before anything else. Nil: there is nothing
	// to wait for (checked already, or the backend is a SnapshotChecker).
	Checked func(context.Context) error
	// BumpRevision is added to the snapshot's revision, and the restored keyspace is marked
	// compacted there (etcdutl's --bump-revision and --mark-compacted): clients that watched
	// the old cluster see a compaction, never revisions going backwards.
	BumpRevision uint64
}

// A SnapshotChecker is a backend whose machines check a snapshot whole before they start
// anything from it: its size and SHA-256 against the RestoreSource's as the bytes arrive, and
// its decryption (age authenticates what it decrypts). With those, the bytes are the ones the
// backup stored, whose etcd checksum was checked as they streamed. The provider then does not read the snapshot once more before the machines do,
// which would cost a restore a whole extra read; a machine that finds the snapshot bad fails
// Start with a RefusedSnapshotError, and the provider deletes every machine of the attempt.
// A backend whose machines cannot be trusted to check (a server that boots and runs its
// user-data) is not one: the provider checks for it, and it waits for Checked.
type SnapshotChecker interface {
	ChecksSnapshots() bool
}

// ChecksSnapshots tells whether m checks the snapshots its machines restore from.
func ChecksSnapshots(m Machines) bool {
	c, ok := m.(SnapshotChecker)
	return ok && c.ChecksSnapshots()
}

// A Decrypter is a backend whose machines can be handed a restore's age identity
// (RestoreSource.AgeIdentity) without it outliving the restore: it is used for the download
// and dropped. A backend that passes what a machine needs in something that stays (a
// server's user-data, kept by the cloud and served to the server all its life) is not one:
// an identity decrypts every backup made to its recipient, so the provider restores no
// encrypted backup onto its machines.
type Decrypter interface {
	DecryptsSnapshots() bool
}

// DecryptsSnapshots tells whether m's machines can be handed an age identity to restore an
// encrypted backup.
func DecryptsSnapshots(m Machines) bool {
	d, ok := m.(Decrypter)
	return ok && d.DecryptsSnapshots()
}

// A CapacityChecker is a backend that can tell, before it makes anything, whether more
// machines fit where it makes them (a cloud project's quota). A bootstrap or an add that
// could not finish then fails before its first machine, with an error that says what to
// raise, instead of half way with machines to clean up.
type CapacityChecker interface {
	// CheckCapacity returns an error saying what is short when n more machines do not fit.
	CheckCapacity(ctx context.Context, n int) error
}

// CheckCapacity asks m whether n more machines fit; a backend that cannot tell says yes.
func CheckCapacity(ctx context.Context, m Machines, n int) error {
	if c, ok := m.(CapacityChecker); ok && n > 0 {
		return c.CheckCapacity(ctx, n)
	}
	return nil
}

// A RefusedSnapshotError is a machine's refusal of the snapshot it was to restore from: not
// the bytes the RestoreSource describes, or not decryptable with its identity.
type RefusedSnapshotError struct{ Reason error }

func (e *RefusedSnapshotError) Error() string { return e.Reason.Error() }

func (e *RefusedSnapshotError) Unwrap() error { return e.Reason }

// Machines is a backend that runs etcd members. Every method is idempotent: calling it again
// for the same cluster and name (after a crash, say) finds what the first call made.
type Machines interface {
	// Allocate reserves a machine and its address, and runs nothing yet.
	Allocate(ctx context.Context, cluster, name string) (Machine, error)
	// Start starts (or restarts) the member on an allocated machine.
	Start(ctx context.Context, cluster, name string, cfg MemberConfig) (Machine, error)
	// Delete stops the member, deletes its data and releases the machine. Deleting a machine
	// that does not exist is not an error.
	Delete(ctx context.Context, cluster, name string) error
	// List returns every machine of the cluster, whatever its state, sorted by name.
	List(ctx context.Context, cluster string) ([]Machine, error)
}

// Sleep waits d, or until ctx is done: backends and the controller wait between the steps
// of a change (a server being deleted, a member joining) without outliving the reconcile.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
