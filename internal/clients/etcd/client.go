package etcd

import (
	"context"
	"crypto/tls"
	"io"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	// dialTimeout bounds the TLS handshake with a member. The dial does not block New: a
	// cluster with members down must still be reachable through the others.
	dialTimeout = 3 * time.Second

	// keepAliveTime and keepAliveTimeout let a call on a connection whose member vanished
	// (a machine deleted, not shut down) fail instead of waiting for its timeout. Pings are
	// only sent while a call is in flight, and not more often than etcd's default
	// --grpc-keepalive-min-time (5s) allows.
	keepAliveTime    = 10 * time.Second
	keepAliveTimeout = 3 * time.Second

	// requestTimeout bounds one call that goes through raft (membership changes, leader
	// transfer). It is longer than etcd's own request timeout (5s plus two election
	// timeouts: 7s with the defaults), so that etcd's own, more telling, refusal comes back
	// rather than a bare deadline.
	requestTimeout = 10 * time.Second

	// statusTimeout bounds a Status call, which a live member answers without raft. It is
	// short because the controller asks every member, and the dead ones cost the whole
	// timeout each.
	statusTimeout = 3 * time.Second

	// nudgeTTL is the lease a nudge grants (and revokes at once): etcd's minimum. A nudge
	// is best effort and repeated, so it waits no longer than a Status call.
	nudgeTTL     = 5
	nudgeTimeout = statusTimeout
)

// A Client is a Cluster reached through clientv3.
type Client struct {
	c   *clientv3.Client
	tls *tls.Config
}

var _ Cluster = &Client{}

// New returns a client of the cluster whose members serve clients at endpoints (https URLs).
// It does not wait for any member to answer: the controller must be able to talk to a
// cluster whose members are partly down, and learns what is up from the calls themselves.
//
// The client stops working when ctx is done; a controller that builds one per reconcile may
// pass the reconcile's context, and must Close it anyway.
func New(ctx context.Context, endpoints []string, tlsConfig *tls.Config) (Cluster, error) {
	c, err := newClient(ctx, endpoints, tlsConfig)
	if err != nil {
		return nil, err
	}
	return &Client{c: c, tls: tlsConfig}, nil
}

func newClient(ctx context.Context, endpoints []string, tlsConfig *tls.Config) (*clientv3.Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New(errNoEndpoints)
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		TLS:                  tlsConfig,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		// The endpoints are the ones the controller chose, from the membership it observed:
		// syncing them from the cluster would let the client wander to members the
		// controller is about to remove.
		AutoSyncInterval: 0,
		Context:          ctx,
		// clientv3 logs every retry and balancer change; the controller reports what matters
		// through the errors it gets.
		Logger: zap.NewNop(),
	})
	return c, errors.Wrap(err, errNewClient)
}

// Members lists the membership from whichever member answers first, without going through
// raft (a serializable read): the controller must see the membership of a cluster that lost
// quorum to say so, and the answer of one member is as fresh as the controller needs.
func (c *Client) Members(ctx context.Context) (uint64, []Member, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := c.c.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		return 0, nil, errors.Wrap(err, errMemberList)
	}
	return resp.Header.GetClusterId(), members(resp.Members), nil
}

// Status asks one member about itself.
func (c *Client) Status(ctx context.Context, endpoint string) (MemberStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	resp, err := c.c.Status(ctx, endpoint)
	if err != nil {
		return MemberStatus{}, errors.Wrap(err, errStatus)
	}
	return MemberStatus{
		ID:               resp.Header.GetMemberId(),
		ClusterID:        resp.Header.GetClusterId(),
		Version:          strings.TrimPrefix(resp.Version, "v"),
		Leader:           resp.Leader,
		RaftTerm:         resp.RaftTerm,
		RaftIndex:        resp.RaftIndex,
		RaftAppliedIndex: resp.RaftAppliedIndex,
		DBSize:           resp.DbSize,
		IsLearner:        resp.IsLearner,
		Errors:           resp.Errors,
	}, nil
}

// AddLearner adds a learner with the peer URL. It is idempotent: when a member already has
// the peer URL (the controller added it in a reconcile that failed later, or the response of
// the first attempt was lost), that member is returned, so that the controller goes on with
// it instead of stopping on an error it would get forever.
//
// etcd derives the ID of a new member from its peer URLs and the time in seconds, so asking
// again within the same second gets "member ID already exist" rather than "Peer URLs already
// exists": both mean the member is there.
//
// The membership is read first: a second proposal while the leader has not applied the
// first is dropped by raft without an answer, and would only time out.
func (c *Client) AddLearner(ctx context.Context, peerURL string) (Member, []Member, error) {
	if _, ms, err := c.Members(ctx); err == nil {
		if m, ok := withPeerURL(ms, peerURL); ok {
			return m, ms, nil
		}
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := c.c.MemberAddAsLearner(rctx, []string{peerURL})
	if errors.Is(err, rpctypes.ErrPeerURLExist) || errors.Is(err, rpctypes.ErrMemberExist) {
		_, ms, lerr := c.Members(ctx)
		if lerr != nil {
			return Member{}, nil, lerr
		}
		if m, ok := withPeerURL(ms, peerURL); ok {
			return m, ms, nil
		}
	}
	if err != nil {
		return Member{}, nil, errors.Wrap(err, errAddLearner)
	}
	return member(resp.Member), members(resp.Members), nil
}

// withPeerURL returns the member that has the peer URL.
func withPeerURL(ms []Member, peerURL string) (Member, bool) {
	for _, m := range ms {
		if slices.Contains(m.PeerURLs, peerURL) {
			return m, true
		}
	}
	return Member{}, false
}

// Promote makes the learner id a voting member. etcd refuses while the learner has not
// caught up with the leader: see IsRetryable.
func (c *Client) Promote(ctx context.Context, id uint64) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err := c.c.MemberPromote(ctx, id)
	return errors.Wrap(err, errPromote)
}

// Nudge grants a lease and revokes it: two raft entries that change no key and no revision.
// A lease whose revoke fails expires by itself a few seconds later.
func (c *Client) Nudge(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, nudgeTimeout)
	defer cancel()
	l, err := c.c.Grant(ctx, nudgeTTL)
	if err != nil {
		return errors.Wrap(err, errNudge)
	}
	_, err = c.c.Revoke(ctx, l.ID)
	return errors.Wrap(err, errNudge)
}

// Remove removes the member id. A member that is already gone is not an error: the
// controller asks again when it did not see the answer of its first attempt.
func (c *Client) Remove(ctx context.Context, id uint64) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err := c.c.MemberRemove(ctx, id)
	if errors.Is(err, rpctypes.ErrMemberNotFound) {
		return nil
	}
	return errors.Wrap(err, errRemove)
}

// MoveLeader asks the leader to hand leadership to the member to. Only the leader accepts
// the request, and the balanced connection of the Client may reach any member, so the
// request goes through a connection of its own to leaderEndpoint.
func (c *Client) MoveLeader(ctx context.Context, leaderEndpoint string, to uint64) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	lc, err := newClient(ctx, []string{leaderEndpoint}, c.tls)
	if err != nil {
		return err
	}
	defer lc.Close() //nolint:errcheck // Nothing to do about a connection that fails to close.
	_, err = lc.MoveLeader(ctx, to)
	return errors.Wrap(err, errMoveLeader)
}

// Snapshot opens a stream of a snapshot of the database of the member at endpoint. It goes
// through a connection of its own to pin the member: a snapshot of whichever member the
// balancer picks could come from a member that lags behind. It has no timeout of its own,
// since its duration grows with the database: ctx bounds it, and the caller closes Data.
func (c *Client) Snapshot(ctx context.Context, endpoint string) (*Snapshot, error) {
	sc, err := newClient(ctx, []string{endpoint}, c.tls)
	if err != nil {
		return nil, err
	}
	// The revision first: the snapshot, taken after, holds at least every revision up to it.
	// A serializable read is answered by the member itself, the one being copied.
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	got, err := sc.Get(rctx, "\x00", clientv3.WithSerializable(), clientv3.WithCountOnly())
	if err != nil {
		_ = sc.Close()
		return nil, errors.Wrap(err, errSnapshot)
	}
	resp, err := sc.SnapshotWithVersion(ctx)
	if err != nil {
		_ = sc.Close()
		return nil, errors.Wrap(err, errSnapshot)
	}
	return &Snapshot{
		Data:      &closeBoth{ReadCloser: resp.Snapshot, client: sc},
		MemberID:  got.Header.GetMemberId(),
		ClusterID: got.Header.GetClusterId(),
		Revision:  got.Header.GetRevision(),
		Version:   strings.TrimPrefix(resp.Version, "v"),
	}, nil
}

// closeBoth closes the snapshot stream and then the connection it came through.
type closeBoth struct {
	io.ReadCloser
	client *clientv3.Client
}

func (c *closeBoth) Close() error {
	err := c.ReadCloser.Close()
	_ = c.client.Close()
	return err
}

// Close releases the connections.
func (c *Client) Close() error {
	return errors.Wrap(c.c.Close(), errClose)
}

func member(m *etcdserverpb.Member) Member {
	if m == nil {
		return Member{}
	}
	return Member{
		ID:         m.ID,
		Name:       m.Name,
		PeerURLs:   m.PeerURLs,
		ClientURLs: m.ClientURLs,
		IsLearner:  m.IsLearner,
	}
}

func members(ms []*etcdserverpb.Member) []Member {
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, member(m))
	}
	return out
}
