package s3

import (
	"net/http"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// S3 error codes the client and its callers act on.
const (
	codeNoSuchBucket            = "NoSuchBucket"
	codeNoSuchBucketPolicy      = "NoSuchBucketPolicy"
	codeBucketAlreadyExists     = "BucketAlreadyExists"
	codeBucketAlreadyOwnedByYou = "BucketAlreadyOwnedByYou"
	codeBucketNotEmpty          = "BucketNotEmpty"
	codeNotImplemented          = "NotImplemented"
)

// errorCode is the S3 error code of err ("" when err carries none). For error
// responses without a body (HEAD, or a bare 501) the SDK derives it from the status
// text: "NotFound", "NotImplemented".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// statusCode is the HTTP status of the response err came from, 0 when err did not
// come from a response (a connection error, a cancelled context...).
func statusCode(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// IsNotFound tells whether err says the bucket does not exist: NoSuchBucket, or a
// 404 without a more specific NoSuch* code (HEAD responses have no body to carry
// one). A missing policy (NoSuchBucketPolicy) is not a missing bucket.
func IsNotFound(err error) bool {
	if err == nil {
		return false
	}
	code := errorCode(err)
	if code == codeNoSuchBucket {
		return true
	}
	return statusCode(err) == http.StatusNotFound && !strings.HasPrefix(code, "NoSuch")
}

// IsOwnedByAnother tells whether err says the bucket name is taken by someone else.
func IsOwnedByAnother(err error) bool {
	return err != nil && errorCode(err) == codeBucketAlreadyExists
}

// IsNotEmpty tells whether err says the bucket still holds objects (or versions).
func IsNotEmpty(err error) bool {
	return err != nil && errorCode(err) == codeBucketNotEmpty
}

// IsNotImplemented tells whether err says the server does not offer the operation
// at all (Swift answers bucket policy requests with a bare 501), as opposed to
// refusing this request.
func IsNotImplemented(err error) bool {
	return err != nil && (statusCode(err) == http.StatusNotImplemented || errorCode(err) == codeNotImplemented)
}

// isNoSuchBucketPolicy tells whether err says the bucket exists but has no policy.
func isNoSuchBucketPolicy(err error) bool {
	return err != nil && errorCode(err) == codeNoSuchBucketPolicy
}

// isAlreadyOwnedByYou tells whether err says the caller already owns the bucket.
func isAlreadyOwnedByYou(err error) bool {
	return err != nil && errorCode(err) == codeBucketAlreadyOwnedByYou
}

// IsAccessDenied tells whether the server refused the caller (403): a bucket of another
// account, or credentials without the right.
func IsAccessDenied(err error) bool {
	return err != nil && (statusCode(err) == http.StatusForbidden || errorCode(err) == "AccessDenied")
}
