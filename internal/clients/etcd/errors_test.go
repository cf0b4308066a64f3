package etcd

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

func TestIsRetryable(t *testing.T) {
	cases := map[string]struct {
		reason string
		err    error
		want   bool
	}{
		"Nil": {
			reason: "No error is nothing to retry.",
		},
		"Plain": {
			reason: "An error that is not etcd's is not known to go away.",
			err:    errors.New("boom"),
		},
		"Unhealthy": {
			reason: "etcd refuses membership changes shortly after a member joined.",
			err:    errors.Wrap(rpctypes.ErrUnhealthy, errRemove),
			want:   true,
		},
		"LearnerNotReady": {
			reason: "etcd refuses to promote a learner that has not caught up yet.",
			err:    errors.Wrap(rpctypes.ErrMemberLearnerNotReady, errPromote),
			want:   true,
		},
		"TooManyLearners": {
			reason: "etcd refuses a second learner until the first is promoted.",
			err:    errors.Wrap(rpctypes.ErrTooManyLearners, errAddLearner),
			want:   true,
		},
		"LeaderChanged": {
			reason: "A request that raced an election may be sent again.",
			err:    errors.Wrap(rpctypes.ErrLeaderChanged, errPromote),
			want:   true,
		},
		"NoLeader": {
			reason: "A member without a leader may have one soon.",
			err:    errors.Wrap(rpctypes.ErrNoLeader, errRemove),
			want:   true,
		},
		"NotLeader": {
			reason: "A leader transfer sent to a member that just lost leadership.",
			err:    errors.Wrap(rpctypes.ErrNotLeader, errMoveLeader),
			want:   true,
		},
		"Timeout": {
			reason: "etcd times out requests while it has no leader.",
			err:    errors.Wrap(rpctypes.ErrTimeout, errAddLearner),
			want:   true,
		},
		"TimeoutDueToLeaderFail": {
			reason: "etcd times out requests while it elects a new leader.",
			err:    errors.Wrap(rpctypes.ErrTimeoutDueToLeaderFail, errAddLearner),
			want:   true,
		},
		"WrappedTwice": {
			reason: "Wrapping by the controller must not hide the cause.",
			err:    fmt.Errorf("reconcile: %w", errors.Wrap(rpctypes.ErrMemberLearnerNotReady, errPromote)),
			want:   true,
		},
		"RawStatusLearnerNotReady": {
			reason: "A gRPC status error that did not go through clientv3 is recognised too.",
			err:    errors.Wrap(rpctypes.ErrGRPCLearnerNotReady, errPromote),
			want:   true,
		},
		"RawStatusNotLeader": {
			reason: "A gRPC status error that did not go through clientv3 is recognised too.",
			err:    errors.Wrap(rpctypes.ErrGRPCNotLeader, errMoveLeader),
			want:   true,
		},
		"ConnectionRefused": {
			reason: "gRPC reports a member it cannot reach as Unavailable.",
			err:    errors.Wrap(status.Error(codes.Unavailable, "connection error: connection refused"), errStatus),
			want:   true,
		},
		"StatusDeadlineExceeded": {
			reason: "A call that timed out may be sent again.",
			err:    errors.Wrap(status.Error(codes.DeadlineExceeded, "context deadline exceeded"), errStatus),
			want:   true,
		},
		"ContextDeadlineExceeded": {
			reason: "clientv3 returns the context's error when the call's deadline passed.",
			err:    errors.Wrap(context.DeadlineExceeded, errMemberList),
			want:   true,
		},
		"ContextCanceled": {
			reason: "A cancelled call was abandoned by the caller, not refused.",
			err:    errors.Wrap(context.Canceled, errMemberList),
		},
		"MemberNotFound": {
			reason: "A member that does not exist will not exist later either.",
			err:    errors.Wrap(rpctypes.ErrMemberNotFound, errPromote),
		},
		"PeerURLExist": {
			reason: "A peer URL in use stays in use.",
			err:    errors.Wrap(rpctypes.ErrPeerURLExist, errAddLearner),
		},
		"MemberNotLearner": {
			reason: "A voter cannot be promoted, however long one waits.",
			err:    errors.Wrap(rpctypes.ErrMemberNotLearner, errPromote),
		},
		"BadLeaderTransferee": {
			reason: "Leadership cannot move to a learner or to a member that does not exist.",
			err:    errors.Wrap(rpctypes.ErrBadLeaderTransferee, errMoveLeader),
		},
		"PermissionDenied": {
			reason: "A client the cluster does not authorise stays unauthorised.",
			err:    errors.Wrap(status.Error(codes.PermissionDenied, "etcdserver: permission denied"), errMemberList),
		},
		"NoSpace": {
			reason: "A full database needs an operator, not a retry.",
			err:    errors.Wrap(rpctypes.ErrNoSpace, errAddLearner),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := IsRetryable(tc.err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nIsRetryable(%v): -want, +got:\n%s", tc.reason, tc.err, diff)
			}
		})
	}
}
