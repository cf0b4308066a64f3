package s3

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errStartUpload    = "cannot start a multipart upload"
	errUploadPart     = "cannot upload a part"
	errCompleteUpload = "cannot complete the multipart upload"
	errReadSource     = "cannot read what is being uploaded"
	errFmtTooManyPart = "the upload needs more than %d parts of %d bytes"
	errPartSize       = "the part size must be between 5 MiB and 5 GiB"
	errPutObject      = "cannot put the object"
	errGetObject      = "cannot get the object"
	errPresign        = "cannot pre-sign the request"

	// MinPartSize is the smallest part S3 accepts, the last one excepted.
	MinPartSize = 5 << 20
	maxPartSize = 5 << 30
	// maxParts is how many parts one multipart upload may have.
	maxParts = 10000
	// partTimeout bounds the upload of one part: a server that stops reading (slow, or
	// stalling on purpose) fails the upload rather than hold it for hours.
	partTimeout = 5 * time.Minute
	// partsInFlight is how many parts are being read or sent at once: one is filled from
	// the source while the other goes to the server, so that neither waits for the other.
	partsInFlight = 2
)

// An Object is an entry of a bucket listing.
type Object struct {
	Key          string
	Size         int64
	LastModified time.Time
}

// An Upload is a multipart upload that was started and neither completed nor aborted.
type Upload struct {
	Key       string
	ID        string
	Initiated time.Time
}

// Objects is the part of the S3 API that reads and writes objects: what backups need.
type Objects interface {
	// UploadStream copies r into the object key through a multipart upload of parts of
	// partSize bytes, with memory bounded by a few parts whatever r's length. The object
	// appears only once r has returned io.EOF: on any error, r's included, the upload is
	// aborted, so that no partial object is ever committed. It returns the bytes written.
	UploadStream(ctx context.Context, bucket, key string, r io.Reader, partSize int64) (int64, error)
	// PutObject writes a small object in one request.
	PutObject(ctx context.Context, bucket, key string, body []byte) error
	// GetObject opens the object for reading; the caller closes it. A missing object gives an
	// error for which IsNoSuchKey is true.
	GetObject(ctx context.Context, bucket, key string) (io.ReadCloser, int64, error)
	// ListObjects lists every object whose key starts with prefix.
	ListObjects(ctx context.Context, bucket, prefix string) ([]Object, error)
	// DeleteObjects deletes the keys; keys that are gone already are not an error.
	DeleteObjects(ctx context.Context, bucket string, keys []string) error
	// ListUploads lists the multipart uploads in progress under prefix.
	ListUploads(ctx context.Context, bucket, prefix string) ([]Upload, error)
	// AbortUpload aborts a multipart upload; one that is gone already is not an error.
	AbortUpload(ctx context.Context, bucket string, u Upload) error
	// PresignGet returns a URL that reads the object without credentials until ttl passes.
	PresignGet(ctx context.Context, bucket, key string, ttl time.Duration) (string, error)
}

var _ Objects = &Client{}

// part is one part of an upload on its way to the server.
type part struct {
	n    int32
	data []byte
	err  error
}

// UploadStream implements Objects.
func (c *Client) UploadStream(ctx context.Context, bucket, key string, r io.Reader, partSize int64) (int64, error) {
	if partSize < MinPartSize || partSize > maxPartSize {
		return 0, errors.New(errPartSize)
	}
	start, err := c.s3.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return 0, errors.Wrap(err, errStartUpload)
	}
	up := Upload{Key: key, ID: aws.ToString(start.UploadId)}
	written, completed, err := c.uploadParts(ctx, bucket, up, r, partSize)
	if err != nil {
		// The abort must happen even when ctx is what failed (a cancelled backup): a
		// dangling upload holds storage nobody sees.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = c.AbortUpload(actx, bucket, up)
		return 0, err
	}
	_, err = c.s3.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket: aws.String(bucket), Key: aws.String(key), UploadId: aws.String(up.ID),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: completed},
	})
	if err != nil {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = c.AbortUpload(actx, bucket, up)
		return 0, errors.Wrap(err, errCompleteUpload)
	}
	return written, nil
}

// uploadParts reads r part by part in one goroutine and sends the parts in this one, so
// that reading the next part overlaps sending this one. Buffers are reused: at most
// partsInFlight exist at any time (a third, queued between the two, would add a part's
// memory, and memory the garbage collector lets grow twice as much, for no speed: the
// reader and the sender each wait for the other only when one of them is the slower).
func (c *Client) uploadParts(ctx context.Context, bucket string, up Upload, r io.Reader, partSize int64) (int64, []types.CompletedPart, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	free := make(chan []byte, partsInFlight)
	for range partsInFlight {
		free <- nil
	}
	parts := make(chan part, partsInFlight-1)
	go readParts(ctx, r, partSize, free, parts)

	var (
		written   int64
		completed []types.CompletedPart
	)
	for p := range parts {
		if p.err != nil {
			return 0, nil, p.err
		}
		pctx, cancel := context.WithTimeout(ctx, partTimeout)
		out, err := c.s3.UploadPart(pctx, &awss3.UploadPartInput{
			Bucket: aws.String(bucket), Key: aws.String(up.Key), UploadId: aws.String(up.ID),
			PartNumber: aws.Int32(p.n), Body: bytes.NewReader(p.data), ContentLength: aws.Int64(int64(len(p.data))),
		})
		cancel()
		if err != nil {
			return 0, nil, errors.Wrap(err, errUploadPart)
		}
		written += int64(len(p.data))
		completed = append(completed, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(p.n)})
		free <- p.data
	}
	return written, completed, nil
}

// readParts fills buffers from free with r's bytes and sends them as numbered parts, the
// last one possibly short (or empty, when r is empty: an object needs one part). It closes
// parts when r is done or failed, or ctx is.
func readParts(ctx context.Context, r io.Reader, partSize int64, free chan []byte, parts chan<- part) {
	defer close(parts)
	send := func(p part) bool {
		select {
		case parts <- p:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for n := int32(1); ; n++ {
		if n > maxParts {
			send(part{err: errors.Errorf(errFmtTooManyPart, maxParts, partSize)})
			return
		}
		var buf []byte
		select {
		case buf = <-free:
		case <-ctx.Done():
			return
		}
		if int64(cap(buf)) < partSize {
			buf = make([]byte, partSize)
		}
		buf = buf[:partSize]
		got, err := io.ReadFull(r, buf)
		switch {
		case err == nil:
			if !send(part{n: n, data: buf}) {
				return
			}
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			// r is done, and only now: a reader that checks what it passed on (a checksum
			// at its end) fails its last read instead.
			if got > 0 || n == 1 {
				send(part{n: n, data: buf[:got]})
			}
			return
		default:
			send(part{err: errors.Wrap(err, errReadSource)})
			return
		}
	}
}

// PutObject implements Objects.
func (c *Client) PutObject(ctx context.Context, bucket, key string, body []byte) error {
	_, err := c.s3.PutObject(ctx, &awss3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
	})
	return errors.Wrap(err, errPutObject)
}

// GetObject implements Objects.
func (c *Client) GetObject(ctx context.Context, bucket, key string) (io.ReadCloser, int64, error) {
	out, err := c.s3.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, 0, errors.Wrap(err, errGetObject)
	}
	return out.Body, aws.ToInt64(out.ContentLength), nil
}

// ListObjects implements Objects.
func (c *Client) ListObjects(ctx context.Context, bucket, prefix string) ([]Object, error) {
	var objs []Object
	in := &awss3.ListObjectsV2Input{Bucket: aws.String(bucket)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	p := awss3.NewListObjectsV2Paginator(c.s3, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, errors.Wrap(err, errListObjects)
		}
		for _, o := range out.Contents {
			objs = append(objs, Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), LastModified: aws.ToTime(o.LastModified)})
		}
	}
	return objs, nil
}

// DeleteObjects implements Objects.
func (c *Client) DeleteObjects(ctx context.Context, bucket string, keys []string) error {
	for len(keys) > 0 {
		n := min(len(keys), maxDeleteKeys)
		ids := make([]types.ObjectIdentifier, 0, n)
		for _, k := range keys[:n] {
			ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
		}
		if err := c.deleteBatch(ctx, bucket, ids); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// ListUploads implements Objects.
func (c *Client) ListUploads(ctx context.Context, bucket, prefix string) ([]Upload, error) {
	var ups []Upload
	in := &awss3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	p := awss3.NewListMultipartUploadsPaginator(c.s3, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, errors.Wrap(err, errListUploads)
		}
		for _, u := range out.Uploads {
			ups = append(ups, Upload{Key: aws.ToString(u.Key), ID: aws.ToString(u.UploadId), Initiated: aws.ToTime(u.Initiated)})
		}
	}
	return ups, nil
}

// AbortUpload implements Objects.
func (c *Client) AbortUpload(ctx context.Context, bucket string, u Upload) error {
	_, err := c.s3.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(u.Key), UploadId: aws.String(u.ID)})
	if err != nil && errorCode(err) != "NoSuchUpload" {
		return errors.Wrap(err, errAbortUpload)
	}
	return nil
}

// PresignGet implements Objects.
func (c *Client) PresignGet(ctx context.Context, bucket, key string, ttl time.Duration) (string, error) {
	req, err := awss3.NewPresignClient(c.s3).PresignGetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)},
		awss3.WithPresignExpires(ttl))
	if err != nil {
		return "", errors.Wrap(err, errPresign)
	}
	return req.URL, nil
}

// IsNoSuchKey tells whether err says the object does not exist.
func IsNoSuchKey(err error) bool {
	return err != nil && (errorCode(err) == "NoSuchKey" || statusCode(err) == 404 && errorCode(err) != codeNoSuchBucket)
}
