package etcd

import (
	"context"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errNoEndpoints = "cannot reach the etcd cluster: no client URL given"
	errNewClient   = "cannot create the etcd client"
	errMemberList  = "cannot list the etcd members"
	errStatus      = "cannot get the status of the etcd member"
	errAddLearner  = "cannot add the etcd learner"
	errPromote     = "cannot promote the etcd learner"
	errNudge       = "cannot append an entry to the raft log (a lease granted and revoked)"
	errRemove      = "cannot remove the etcd member"
	errMoveLeader  = "cannot move the etcd leadership"
	errSnapshot    = "cannot take a snapshot of the etcd member"
	errClose       = "cannot close the etcd client"
)

// retryable are the refusals etcd gives while a membership change settles or leadership
// moves. Those with the gRPC code Unavailable are retryable anyway (see IsRetryable); they are
// listed to say which ones the controller meets.
var retryable = []error{
	// A member joined or came back less than 5s ago, or too few members are connected to
	// the leader to change the membership safely.
	rpctypes.ErrUnhealthy,
	// The learner has not caught up with the leader yet.
	rpctypes.ErrMemberLearnerNotReady,
	// The previous learner is not promoted yet.
	rpctypes.ErrTooManyLearners,
	// The request raced an election.
	rpctypes.ErrLeaderChanged,
	rpctypes.ErrNoLeader,
	rpctypes.ErrNotLeader,
	rpctypes.ErrTimeout,
	rpctypes.ErrTimeoutDueToLeaderFail,
	rpctypes.ErrTimeoutDueToConnectionLost,
	rpctypes.ErrStopped,
}

// IsRetryable tells whether err is a refusal that goes away by itself, so that the controller
// asks again soon instead of reporting a failure: a membership change that etcd does not
// accept yet, a leadership change in progress, or a member or call that timed out (including
// the call's own deadline: a cluster that lost quorum does not answer, it times out).
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	err = etcdError(err)
	for _, r := range retryable {
		if errors.Is(err, r) {
			return true
		}
	}
	var code codes.Code
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	} else if s, ok := status.FromError(err); ok {
		code = s.Code()
	}
	return code == codes.Unavailable || code == codes.DeadlineExceeded
}

// etcdError finds the etcd or gRPC error err wraps, and returns it as clientv3 returns etcd's
// refusals: an rpctypes.EtcdError (so that errors.Is finds the errors of rpctypes) when etcd
// knows it, the gRPC status error otherwise. clientv3 converts the errors of unary calls, but
// not all errors go through it, and a wrapped status error no longer compares to etcd's.
func etcdError(err error) error {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return rpctypes.Error(se.GRPCStatus().Err())
	}
	return err
}
