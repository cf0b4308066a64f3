// Package httpmetrics counts the provider's requests to its backends (OpenStack's APIs, S3)
// by backend, operation and answer, and times them: what a platform team watches to see what
// the provider costs its cloud, and what the benchmarks count.
package httpmetrics

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Backends the provider talks to.
const (
	OpenStack = "openstack"
	S3        = "s3"
)

// Metrics are the request counter and duration histogram, labelled by backend and operation.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New registers the metrics with reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stackservices_backend_requests_total",
			Help: "HTTP requests the provider made to a backend, by backend, operation (method and path, IDs and names replaced) and status code (\"error\" when no answer came).",
		}, []string{"backend", "operation", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stackservices_backend_request_duration_seconds",
			Help:    "Time from sending a request to a backend to its response headers, by backend and operation.",
			Buckets: prometheus.DefBuckets,
		}, []string{"backend", "operation"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// Wrap returns a function that wraps a transport so that it counts the requests to backend.
func (m *Metrics) Wrap(backend string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return &transport{next: next, backend: backend, m: m}
	}
}

type transport struct {
	next    http.RoundTripper
	backend string
	m       *Metrics
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	op := Operation(t.backend, r)
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	t.m.duration.WithLabelValues(t.backend, op).Observe(time.Since(start).Seconds())
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.m.requests.WithLabelValues(t.backend, op, code).Inc()
	return resp, err
}

// id matches path segments that name one object: UUIDs, hex IDs (Keystone's, project IDs in
// Cinder's URLs) and numbers.
var id = regexp.MustCompile(`^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32}|[0-9]+)$`)

// s3Subresources are the query parameters that choose an S3 operation on a bucket or object.
var s3Subresources = []string{"acl", "delete", "location", "policy", "uploadId", "uploads", "versioning", "versions"}

// Operation names a request without what varies per object, so that the metric's label
// values stay few: "GET /v2.0/security-groups/{id}", "PUT /{bucket}?acl". Tenant-chosen names
// (S3 buckets and keys) never become label values.
func Operation(backend string, r *http.Request) string {
	if backend == S3 {
		return r.Method + " " + s3Path(r)
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	for i, s := range segs {
		if id.MatchString(s) {
			segs[i] = "{id}"
		}
	}
	return r.Method + " /" + strings.Join(segs, "/")
}

// s3Path is the path-style shape of an S3 request: the bucket and the object, if any, and
// the subresource the query selects.
func s3Path(r *http.Request) string {
	p := "/"
	switch segs := strings.SplitN(strings.Trim(r.URL.Path, "/"), "/", 2); {
	case segs[0] == "":
	case len(segs) == 1:
		p = "/{bucket}"
	default:
		p = "/{bucket}/{key}"
	}
	q := r.URL.Query()
	var sub []string
	for _, s := range s3Subresources {
		if q.Has(s) {
			sub = append(sub, s)
		}
	}
	if len(sub) > 0 {
		slices.Sort(sub)
		p += "?" + strings.Join(sub, "&")
	}
	return p
}
