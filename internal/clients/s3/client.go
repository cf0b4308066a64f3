// Package s3 is the provider's narrow S3 client: bucket lifecycle, ACLs, bucket
// policies and versioning, for AWS and for the S3 APIs of other servers (Swift's
// s3api, versitygw), plus the pure normalisation that lets the controller compare
// what it wants with what a server returns without re-writing on every poll.
package s3

import (
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errNoCredentials = "cannot build an S3 client: the access key ID and the secret access key are both required"
	errEndpoint      = "cannot build an S3 client: the endpoint must be an absolute http(s) URL without user information"

	// DefaultRegion is the region requests are signed for when Config names none.
	// Swift's s3api and versitygw default their location to it.
	DefaultRegion = "us-east-1"

	// maxAttempts bounds the SDK's retries of transient (5xx, throttling, connection)
	// errors: the managed reconciler retries anyway, and a reconcile must not spend
	// its whole timeout sleeping in one call.
	maxAttempts = 3
)

// Config is where and as whom the client talks S3.
type Config struct {
	// Endpoint is the base URL of the S3 API, e.g. http://127.0.0.1:8080. Empty
	// means AWS's own endpoint for the region.
	Endpoint string
	// Region is the region requests are signed for. S3 servers other than AWS
	// compare it with their configured location (Swift: "location"); empty means
	// DefaultRegion.
	Region string

	AccessKeyID     string
	SecretAccessKey string
}

// An Option changes how New builds the client.
type Option func(*options)

type options struct {
	httpClient *http.Client
	wrap       func(http.RoundTripper) http.RoundTripper
	// backoff replaces the SDK's retry delays; tests use it to retry at once.
	backoff retry.BackoffDelayer
}

// WithHTTPClient makes the client send its requests through c instead of the SDK's
// default HTTP client.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) { o.httpClient = c }
}

// WithTransportWrapper wraps the HTTP transport the client uses, so tests (and
// metrics) can observe or count every request, retries included.
func WithTransportWrapper(w func(http.RoundTripper) http.RoundTripper) Option {
	return func(o *options) { o.wrap = w }
}

// Client talks to one S3 endpoint with one set of credentials.
type Client struct {
	s3     *awss3.Client
	region string
}

var _ Buckets = &Client{}

// New returns a client for cfg. It never contacts the server.
func New(cfg Config, o ...Option) (*Client, error) {
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, errors.New(errNoCredentials)
	}
	if cfg.Endpoint != "" {
		// The endpoint ends up in error messages (url.Error), so it must not carry
		// credentials; the message deliberately does not echo it.
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return nil, errors.New(errEndpoint)
		}
	}
	region := cfg.Region
	if region == "" {
		region = DefaultRegion
	}

	opts := &options{}
	for _, fn := range o {
		fn(opts)
	}

	c := awss3.New(awss3.Options{
		Region:      region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")),
		// Path style (http://host/bucket) works with every server and with endpoints
		// that are bare IP addresses; virtual hosts need wildcard DNS.
		UsePathStyle: true,
		// Since 2025 the SDK adds CRC32 checksums to every request that allows one
		// and streams bodies with aws-chunked trailers; Swift and versitygw reject
		// or mis-handle both. Only send and check checksums where the API requires
		// them.
		RequestChecksumCalculation:                aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation:                aws.ResponseChecksumValidationWhenRequired,
		DisableLogOutputChecksumValidationSkipped: true,
		Retryer:    newRetryer(opts.backoff),
		HTTPClient: httpClient(opts),
		// Swift's s3api refuses bodies without Content-MD5 (multi-object delete);
		// the SDK no longer sends it.
		APIOptions: []func(*middleware.Stack) error{addContentMD5},
	}, func(o *awss3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return &Client{s3: c, region: region}, nil
}

// newRetryer is the SDK's standard retryer (5xx, throttling, connection errors,
// exponential backoff with jitter) capped at maxAttempts, that never retries a 4xx
// other than 429: a 4xx is an answer about the request (missing bucket, denied,
// conflict), and retrying it only delays the error the reconciler must report.
func newRetryer(backoff retry.BackoffDelayer) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.Backoff = backoff
		o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(noRetryClientErrors)}, o.Retryables...)
	})
}

func noRetryClientErrors(err error) aws.Ternary {
	s := statusCode(err)
	if s >= 400 && s < 500 && s != http.StatusTooManyRequests {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// responseTimeout bounds the wait for a response's headers: an endpoint (a tenant may name
// its own) that accepts a request and never answers fails it, rather than hold the
// reconcile that sent it until that reconcile's own timeout. Every S3 operation answers in
// well under it; a CompleteMultipartUpload of many parts takes seconds.
const responseTimeout = time.Minute

// sharedTransport is the one HTTP transport under every client New makes: the SDK's tuned
// transport with responseTimeout. Clients are made for each reconcile (their credentials
// differ), so a transport of their own would dial every endpoint anew each time and leave
// the last connection idle until the collector found it; in one shared pool, a poll of N
// buckets reuses the same few connections. Requests are signed per client, so sharing
// connections shares no credentials.
var sharedTransport = sync.OnceValue(func() *http.Transport {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.ResponseHeaderTimeout = responseTimeout
	}).GetTransport()
})

func httpClient(o *options) awss3.HTTPClient {
	if o.httpClient != nil {
		if o.wrap == nil {
			return o.httpClient
		}
		c := *o.httpClient
		base := c.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c.Transport = o.wrap(base)
		return &c
	}
	var rt http.RoundTripper = sharedTransport()
	if o.wrap != nil {
		rt = o.wrap(rt)
	}
	// A plain client, not the SDK's BuildableClient, which the SDK would copy (with a
	// transport of its own) for each client.
	return &http.Client{Transport: rt}
}
