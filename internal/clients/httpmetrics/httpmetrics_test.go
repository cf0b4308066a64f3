package httpmetrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestOperation(t *testing.T) {
	cases := map[string]struct {
		backend, method, url, want string
	}{
		"NeutronList":       {OpenStack, "GET", "http://n:9696/v2.0/security-groups?project_id=3f2c&fields=id", "GET /v2.0/security-groups"},
		"NeutronOne":        {OpenStack, "DELETE", "http://n:9696/v2.0/security-group-rules/6f1c3a52-3a2b-4c8e-9a51-1f0e2d3c4b5a", "DELETE /v2.0/security-group-rules/{id}"},
		"NovaAction":        {OpenStack, "POST", "http://n/compute/v2.1/servers/6f1c3a52-3a2b-4c8e-9a51-1f0e2d3c4b5a/action", "POST /compute/v2.1/servers/{id}/action"},
		"CinderProject":     {OpenStack, "GET", "http://c/v3/0123456789abcdef0123456789abcdef/volumes/detail", "GET /v3/{id}/volumes/detail"},
		"KeystoneEC2":       {OpenStack, "POST", "http://k/v3/users/0123456789abcdef0123456789abcdef/credentials/OS-EC2", "POST /v3/users/{id}/credentials/OS-EC2"},
		"NovaFlavorNumber":  {OpenStack, "GET", "http://n/v2.1/flavors/42", "GET /v2.1/flavors/{id}"},
		"S3ListBuckets":     {S3, "GET", "http://s3/", "GET /"},
		"S3Bucket":          {S3, "HEAD", "http://s3/shop-assets", "HEAD /{bucket}"},
		"S3BucketACL":       {S3, "PUT", "http://s3/shop-assets?acl", "PUT /{bucket}?acl"},
		"S3ObjectKeyHidden": {S3, "PUT", "http://s3/backups/team/secret-name.snapshot?partNumber=2&uploadId=abc", "PUT /{bucket}/{key}?uploadId"},
		"S3Subresources":    {S3, "GET", "http://s3/b?versions&acl", "GET /{bucket}?acl&versions"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.url, nil)
			if diff := cmp.Diff(tc.want, Operation(tc.backend, r)); diff != "" {
				t.Errorf("Operation: -want, +got:\n%s", diff)
			}
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestWrap: every request through the transport is counted once, with its answer's code, or
// "error" when there was none, and timed.
func TestWrap(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	fail := false
	rt := m.Wrap(OpenStack)(roundTripper(func(*http.Request) (*http.Response, error) {
		if fail {
			return nil, errors.New("connection refused")
		}
		return &http.Response{StatusCode: http.StatusNotFound, Body: http.NoBody}, nil
	}))
	for range 2 {
		if _, err := rt.RoundTrip(httptest.NewRequest("GET", "http://n/v2.0/ports/42", nil)); err != nil {
			t.Fatal(err)
		}
	}
	fail = true
	if _, err := rt.RoundTrip(httptest.NewRequest("GET", "http://n/v2.0/ports/42", nil)); err == nil {
		t.Fatal("want the transport's error")
	}
	want := `
# HELP stackservices_backend_requests_total HTTP requests the provider made to a backend, by backend, operation (method and path, IDs and names replaced) and status code ("error" when no answer came).
# TYPE stackservices_backend_requests_total counter
stackservices_backend_requests_total{backend="openstack",code="404",operation="GET /v2.0/ports/{id}"} 2
stackservices_backend_requests_total{backend="openstack",code="error",operation="GET /v2.0/ports/{id}"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "stackservices_backend_requests_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 1 {
		t.Errorf("duration series: %d, want 1", n)
	}
}
