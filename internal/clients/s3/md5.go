package s3

import (
	"context"
	"crypto/md5" //nolint:gosec // Content-MD5 is an integrity header the S3 API defines, not a security measure.
	"encoding/base64"
	"io"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errReadBody   = "cannot read the request body to compute its Content-MD5"
	errRewindBody = "cannot rewind the request body after computing its Content-MD5"

	headerContentMD5 = "Content-MD5"
)

// contentMD5 sets Content-MD5 on requests that carry a body. aws-sdk-go-v2 dropped
// it for CRC32 checksums in 2025, but Swift's s3api still refuses a multi-object
// delete without it ("Missing required header for this request: Content-MD5"),
// and AWS accepts both. Bodies here are small XML or JSON documents, always seekable.
type contentMD5 struct{}

func (contentMD5) ID() string { return "stackservices:ContentMD5" }

func (contentMD5) HandleBuild(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
	req, ok := in.Request.(*smithyhttp.Request)
	if !ok || req.Header.Get(headerContentMD5) != "" || req.GetStream() == nil || !req.IsStreamSeekable() {
		return next.HandleBuild(ctx, in)
	}
	h := md5.New() //nolint:gosec // See contentMD5.
	n, err := io.Copy(h, req.GetStream())
	if err != nil {
		return middleware.BuildOutput{}, middleware.Metadata{}, errors.Wrap(err, errReadBody)
	}
	if err := req.RewindStream(); err != nil {
		return middleware.BuildOutput{}, middleware.Metadata{}, errors.Wrap(err, errRewindBody)
	}
	if n > 0 {
		req.Header.Set(headerContentMD5, base64.StdEncoding.EncodeToString(h.Sum(nil)))
	}
	return next.HandleBuild(ctx, in)
}

func addContentMD5(s *middleware.Stack) error {
	return s.Build.Add(contentMD5{}, middleware.After)
}
