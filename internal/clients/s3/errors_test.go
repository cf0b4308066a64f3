package s3

import (
	"net/http"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// sdkError builds an error shaped like the ones the SDK returns: an operation
// error around an HTTP response error around the API error.
func sdkError(status int, apiErr error) error {
	return errors.Wrap(&smithy.OperationError{
		ServiceID:     "S3",
		OperationName: "Op",
		Err: &awshttp.ResponseError{
			ResponseError: &smithyhttp.ResponseError{
				Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
				Err:      apiErr,
			},
		},
	}, "cannot do it")
}

func generic(code string) error { return &smithy.GenericAPIError{Code: code, Message: code} }

func TestClassifiers(t *testing.T) {
	type want struct {
		notFound, ownedByAnother, notEmpty, notImplemented bool
	}
	cases := map[string]struct {
		err  error
		want want
	}{
		"Nil": {},
		"NotFromAResponse": {
			err: errors.New("connection refused"),
		},
		"NoSuchBucket": {
			err:  sdkError(http.StatusNotFound, generic("NoSuchBucket")),
			want: want{notFound: true},
		},
		"TypedNoSuchBucket": {
			err:  sdkError(http.StatusNotFound, &types.NoSuchBucket{}),
			want: want{notFound: true},
		},
		"BareNoSuchBucket": {
			err:  generic("NoSuchBucket"),
			want: want{notFound: true},
		},
		"HeadNotFound": {
			// HEAD responses have no body: the SDK derives the code from the status.
			err:  sdkError(http.StatusNotFound, &types.NotFound{}),
			want: want{notFound: true},
		},
		"NoSuchBucketPolicyIsNotAMissingBucket": {
			err: sdkError(http.StatusNotFound, generic("NoSuchBucketPolicy")),
		},
		"NoSuchKeyIsNotAMissingBucket": {
			err: sdkError(http.StatusNotFound, generic("NoSuchKey")),
		},
		"BucketAlreadyExists": {
			err:  sdkError(http.StatusConflict, &types.BucketAlreadyExists{}),
			want: want{ownedByAnother: true},
		},
		"BucketAlreadyOwnedByYou": {
			err: sdkError(http.StatusConflict, &types.BucketAlreadyOwnedByYou{}),
		},
		"BucketNotEmpty": {
			err:  sdkError(http.StatusConflict, generic("BucketNotEmpty")),
			want: want{notEmpty: true},
		},
		"Bare501": {
			err:  sdkError(http.StatusNotImplemented, generic("NotImplemented")),
			want: want{notImplemented: true},
		},
		"501WithAnotherCode": {
			err:  sdkError(http.StatusNotImplemented, generic("Unsupported")),
			want: want{notImplemented: true},
		},
		"NotImplementedCodeWithAnotherStatus": {
			err:  sdkError(http.StatusBadRequest, generic("NotImplemented")),
			want: want{notImplemented: true},
		},
		"AccessDenied": {
			err: sdkError(http.StatusForbidden, generic("AccessDenied")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := want{
				notFound:       IsNotFound(tc.err),
				ownedByAnother: IsOwnedByAnother(tc.err),
				notEmpty:       IsNotEmpty(tc.err),
				notImplemented: IsNotImplemented(tc.err),
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("classifiers: -want, +got:\n%s", diff)
			}
		})
	}
}
