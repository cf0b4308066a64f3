// Package etcd talks to the etcd clusters the provider runs: membership, per-member status and
// leadership, over TLS with a client certificate signed by the cluster's CA. The controllers use
// the Cluster interface and never build clientv3 requests themselves.
package etcd

import (
	"context"
	"io"
)

// A Member is an entry of the etcd membership.
type Member struct {
	ID   uint64
	Name string
	// Name is empty for a member that was added but has not started yet.
	PeerURLs   []string
	ClientURLs []string
	IsLearner  bool
}

// A MemberStatus is what one member says of itself and of the cluster.
type MemberStatus struct {
	// ID is the member's own ID.
	ID        uint64
	ClusterID uint64
	// Version is the member's etcd server version, without a leading "v": 3.6.16.
	Version string
	// Leader is the ID of the member this member takes for the leader (0: none).
	Leader           uint64
	RaftTerm         uint64
	RaftIndex        uint64
	RaftAppliedIndex uint64
	DBSize           int64
	IsLearner        bool
	// Errors are the alarms and errors the member reports (a NOSPACE alarm, say).
	Errors []string
}

// Cluster is one etcd cluster, reached through the client URLs of its members.
type Cluster interface {
	// Members lists the membership and returns the cluster ID.
	Members(ctx context.Context) (clusterID uint64, members []Member, err error)
	// Status asks the member at the client URL endpoint about itself.
	Status(ctx context.Context, endpoint string) (MemberStatus, error)
	// AddLearner adds a non-voting member with the peer URL, and returns it and the whole
	// membership after the change.
	AddLearner(ctx context.Context, peerURL string) (added Member, members []Member, err error)
	// Promote makes a learner a voting member. etcd refuses while the learner lags behind the
	// leader (see IsRetryable).
	Promote(ctx context.Context, id uint64) error
	// Remove removes a member from the membership.
	Remove(ctx context.Context, id uint64) error
	// MoveLeader asks the leader, reached at its client URL, to transfer leadership to the
	// member with ID to.
	MoveLeader(ctx context.Context, leaderEndpoint string, to uint64) error
	// Nudge appends to the raft log an entry no client sees (a lease granted and revoked at
	// once). A member that joined from the leader's snapshot refuses every request, its own
	// announcement included, until it applies an entry after that snapshot (etcd counts its
	// applied index from entries only, and the gap to the snapshot's index is "too many
	// requests" once it exceeds 5000); on a cluster nobody writes to, it would wait forever.
	Nudge(ctx context.Context) error
	// Snapshot opens a stream of a point-in-time copy of the database of the member at the
	// client URL endpoint.
	Snapshot(ctx context.Context, endpoint string) (*Snapshot, error)
	// Close releases the connections.
	Close() error
}

// A Snapshot is a point-in-time copy of one member's database, on its way.
type Snapshot struct {
	// Data is the database followed by its SHA-256, as etcd sends it (and etcdutl restore
	// checks it). The caller closes it.
	Data io.ReadCloser
	// MemberID and ClusterID say whose database it is.
	MemberID, ClusterID uint64
	// Revision is a revision the snapshot holds at least: the member's revision just before
	// the snapshot began. Writes during the snapshot's first moments may add a few.
	Revision int64
	// Version is the storage version of the database, as the member reports it: 3.6.0.
	// Members of etcd 3.5 report none.
	Version string
}
