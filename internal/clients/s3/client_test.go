package s3

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/google/go-cmp/cmp"
)

const (
	testAccessKey = "AKIDEXAMPLEACCESS"
	testSecretKey = "wJalrXUtnFEMIexampleSECRET"
	bucket        = "b"
)

// withRetryBackoff replaces the SDK's retry delays, so that tests of retries do
// not sleep.
func withRetryBackoff(b retry.BackoffDelayer) Option {
	return func(o *options) { o.backoff = b }
}

var noDelay = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })

// A reply is one canned response of the fake server.
type reply struct {
	status int
	body   string
}

// A request is what the fake server received.
type request struct {
	key    string
	header http.Header
	body   string
}

// fakeS3 answers requests with canned replies, chosen by method, path and
// sub-resources ("GET /b?acl"). A key with several replies gives them in order,
// then repeats the last.
type fakeS3 struct {
	t       *testing.T
	mu      sync.Mutex
	replies map[string][]reply
	got     []request
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := requestKey(r)
	f.mu.Lock()
	f.got = append(f.got, request{key: key, header: r.Header.Clone(), body: string(body)})
	rs, ok := f.replies[key]
	if ok && len(rs) > 1 {
		f.replies[key] = rs[1:]
	}
	f.mu.Unlock()
	if !ok || len(rs) == 0 {
		f.t.Errorf("unexpected request %q", key)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(rs[0].status)
	_, _ = io.WriteString(w, rs[0].body)
}

func (f *fakeS3) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func (f *fakeS3) keys() []string {
	var keys []string
	for _, r := range f.requests() {
		keys = append(keys, r.key)
	}
	return keys
}

// requestKey names a request by method, path and the names of its query
// parameters (not their values), leaving out the SDK's x-id.
func requestKey(r *http.Request) string {
	var names []string
	for n := range r.URL.Query() {
		if n != "x-id" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	key := r.Method + " " + r.URL.Path
	if len(names) > 0 {
		key += "?" + strings.Join(names, "&")
	}
	return key
}

// countingTransport counts the requests that reach the wire, retries included.
type countingTransport struct {
	n    atomic.Int32
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// newTestClient starts a fake server with the replies and returns a client for
// it, the server (to inspect what it received) and the request counter.
func newTestClient(t *testing.T, region string, replies map[string][]reply) (*Client, *fakeS3, *countingTransport) {
	t.Helper()
	f := &fakeS3{t: t, replies: replies}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ct := &countingTransport{}
	c, err := New(Config{Endpoint: srv.URL, Region: region, AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey},
		WithHTTPClient(srv.Client()),
		WithTransportWrapper(func(next http.RoundTripper) http.RoundTripper { ct.next = next; return ct }),
		withRetryBackoff(noDelay))
	if err != nil {
		t.Fatalf("New(...): %v", err)
	}
	return c, f, ct
}

func errXML(code string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>` + code + ` message</Message><RequestId>req-1</RequestId></Error>`
}

func ok(body string) []reply { return []reply{{status: http.StatusOK, body: body}} }

func fail(status int, code string) []reply {
	if code == "" {
		return []reply{{status: status}}
	}
	return []reply{{status: status, body: errXML(code)}}
}

// checkNoSecrets fails the test if err's message shows the credentials.
func checkNoSecrets(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if msg := err.Error(); strings.Contains(msg, testSecretKey) || strings.Contains(msg, testAccessKey) {
		t.Errorf("error message shows credentials: %s", msg)
	}
}

func checkContentMD5(t *testing.T, r request) {
	t.Helper()
	sum := md5.Sum([]byte(r.body))
	if diff := cmp.Diff(base64.StdEncoding.EncodeToString(sum[:]), r.header.Get("Content-MD5")); diff != "" {
		t.Errorf("%s: Content-MD5: -want, +got:\n%s", r.key, diff)
	}
}

func TestNew(t *testing.T) {
	cases := map[string]struct {
		cfg        Config
		wantErr    bool
		wantRegion string
	}{
		"DefaultRegion": {
			cfg:        Config{Endpoint: "http://127.0.0.1:8080", AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey},
			wantRegion: DefaultRegion,
		},
		"AWS": {
			cfg:        Config{Region: "eu-west-1", AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey},
			wantRegion: "eu-west-1",
		},
		"NoAccessKey": {
			cfg:     Config{Endpoint: "http://127.0.0.1:8080", SecretAccessKey: testSecretKey},
			wantErr: true,
		},
		"NoSecret": {
			cfg:     Config{Endpoint: "http://127.0.0.1:8080", AccessKeyID: testAccessKey},
			wantErr: true,
		},
		"RelativeEndpoint": {
			cfg:     Config{Endpoint: "127.0.0.1:8080", AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey},
			wantErr: true,
		},
		"CredentialsInEndpoint": {
			cfg:     Config{Endpoint: "http://" + testAccessKey + ":" + testSecretKey + "@127.0.0.1:8080", AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := New(tc.cfg)
			checkNoSecrets(t, err)
			if diff := cmp.Diff(tc.wantErr, err != nil); diff != "" {
				t.Fatalf("New(...): -want error, +got error (%v):\n%s", err, diff)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.wantRegion, c.region); diff != "" {
				t.Errorf("New(...): region: -want, +got:\n%s", diff)
			}
		})
	}
}

// TestRequests checks what goes on the wire: path-style URLs, the signing region,
// and no checksums where the API does not require them.
func TestRequests(t *testing.T) {
	c, f, _ := newTestClient(t, "RegionOne", map[string][]reply{
		"GET /b?versioning": ok(`<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>`),
		"PUT /b?policy":     {{status: http.StatusNoContent}},
	})
	if _, err := c.GetVersioning(context.Background(), bucket); err != nil {
		t.Fatalf("GetVersioning(...): %v", err)
	}
	if err := c.PutPolicy(context.Background(), bucket, `{"Version":"2012-10-17"}`); err != nil {
		t.Fatalf("PutPolicy(...): %v", err)
	}
	got := f.requests()
	if diff := cmp.Diff([]string{"GET /b?versioning", "PUT /b?policy"}, f.keys()); diff != "" {
		t.Fatalf("requests: -want, +got:\n%s", diff)
	}
	for _, r := range got {
		if a := r.header.Get("Authorization"); !strings.Contains(a, "Credential="+testAccessKey+"/") || !strings.Contains(a, "/RegionOne/s3/aws4_request") {
			t.Errorf("%s: Authorization %q is not signed for the access key and region", r.key, a)
		}
	}
	for h := range got[0].header {
		if strings.HasPrefix(strings.ToLower(h), "x-amz-checksum") || strings.EqualFold(h, "Content-MD5") {
			t.Errorf("%s: unexpected checksum header %s", got[0].key, h)
		}
	}
	if got[0].header.Get("X-Amz-Checksum-Mode") != "" {
		t.Errorf("%s: the client asks for response checksums", got[0].key)
	}
	checkContentMD5(t, got[1])
}

func TestCreateBucket(t *testing.T) {
	type want struct {
		err            bool
		ownedByAnother bool
		requests       []string
		body           string
	}
	cases := map[string]struct {
		reason  string
		region  string
		replies map[string][]reply
		want    want
	}{
		"Created": {
			reason:  "A new bucket in us-east-1 is created without a location constraint.",
			region:  "us-east-1",
			replies: map[string][]reply{"PUT /b": ok("")},
			want:    want{requests: []string{"PUT /b"}},
		},
		"CreatedElsewhere": {
			reason:  "Other regions name themselves as the location constraint.",
			region:  "RegionOne",
			replies: map[string][]reply{"PUT /b": ok("")},
			want: want{
				requests: []string{"PUT /b"},
				body:     `<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>RegionOne</LocationConstraint></CreateBucketConfiguration>`,
			},
		},
		"AlreadyOwnedByYou": {
			reason:  "A bucket the caller owns is success.",
			region:  "us-east-1",
			replies: map[string][]reply{"PUT /b": fail(http.StatusConflict, "BucketAlreadyOwnedByYou")},
			want:    want{requests: []string{"PUT /b"}},
		},
		"AlreadyExistsInOwnAccount": {
			reason: "Swift says BucketAlreadyExists for the caller's own container; its ACL's owner is the caller.",
			region: "us-east-1",
			replies: map[string][]reply{
				"PUT /b":            fail(http.StatusConflict, "BucketAlreadyExists"),
				"GET /?max-buckets": ok(`<ListAllMyBucketsResult><Owner><ID>proj:alice</ID></Owner><Buckets></Buckets></ListAllMyBucketsResult>`),
				"GET /b?acl":        ok(`<AccessControlPolicy><Owner><ID>proj:alice</ID></Owner><AccessControlList></AccessControlList></AccessControlPolicy>`),
			},
			want: want{requests: []string{"PUT /b", "GET /?max-buckets", "GET /b?acl"}},
		},
		"OwnedByAnother": {
			reason: "A bucket whose owner is not the caller is someone else's, even if an admin caller can list it.",
			region: "us-east-1",
			replies: map[string][]reply{
				"PUT /b":            fail(http.StatusConflict, "BucketAlreadyExists"),
				"GET /?max-buckets": ok(`<ListAllMyBucketsResult><Owner><ID>proj:alice</ID></Owner><Buckets><Bucket><Name>b</Name></Bucket></Buckets></ListAllMyBucketsResult>`),
				"GET /b?acl":        ok(`<AccessControlPolicy><Owner><ID>proj:bob</ID></Owner><AccessControlList></AccessControlList></AccessControlPolicy>`),
			},
			want: want{err: true, ownedByAnother: true, requests: []string{"PUT /b", "GET /?max-buckets", "GET /b?acl"}},
		},
		"OwnedByAnotherAndCannotList": {
			reason: "When the caller's buckets cannot be listed the server's answer stands.",
			region: "us-east-1",
			replies: map[string][]reply{
				"PUT /b":            fail(http.StatusConflict, "BucketAlreadyExists"),
				"GET /?max-buckets": fail(http.StatusForbidden, "AccessDenied"),
			},
			want: want{err: true, ownedByAnother: true, requests: []string{"PUT /b", "GET /?max-buckets"}},
		},
		"Denied": {
			reason:  "A 4xx is not retried.",
			region:  "us-east-1",
			replies: map[string][]reply{"PUT /b": fail(http.StatusForbidden, "AccessDenied")},
			want:    want{err: true, requests: []string{"PUT /b"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, f, _ := newTestClient(t, tc.region, tc.replies)
			err := c.CreateBucket(context.Background(), bucket)
			checkNoSecrets(t, err)
			got := want{err: err != nil, ownedByAnother: IsOwnedByAnother(err), requests: f.keys(), body: f.requests()[0].body}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nCreateBucket(...): -want, +got (error %v):\n%s", tc.reason, err, diff)
			}
		})
	}
}

func TestBucketExists(t *testing.T) {
	type want struct {
		exists bool
		err    bool
	}
	cases := map[string]struct {
		replies []reply
		want    want
	}{
		"Exists":    {replies: ok(""), want: want{exists: true}},
		"Missing":   {replies: fail(http.StatusNotFound, ""), want: want{}},
		"Forbidden": {replies: fail(http.StatusForbidden, ""), want: want{err: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _, n := newTestClient(t, "", map[string][]reply{"HEAD /b": tc.replies})
			exists, err := c.BucketExists(context.Background(), bucket)
			checkNoSecrets(t, err)
			if diff := cmp.Diff(tc.want, want{exists: exists, err: err != nil}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("BucketExists(...): -want, +got (error %v):\n%s", err, diff)
			}
			if diff := cmp.Diff(int32(1), n.n.Load()); diff != "" {
				t.Errorf("BucketExists(...): requests: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestDeleteBucket(t *testing.T) {
	type want struct {
		err, notEmpty bool
	}
	cases := map[string]struct {
		replies []reply
		want    want
	}{
		"Deleted":  {replies: []reply{{status: http.StatusNoContent}}},
		"Missing":  {replies: fail(http.StatusNotFound, "NoSuchBucket")},
		"NotEmpty": {replies: fail(http.StatusConflict, "BucketNotEmpty"), want: want{err: true, notEmpty: true}},
		"Denied":   {replies: fail(http.StatusForbidden, "AccessDenied"), want: want{err: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _, n := newTestClient(t, "", map[string][]reply{"DELETE /b": tc.replies})
			err := c.DeleteBucket(context.Background(), bucket)
			if diff := cmp.Diff(tc.want, want{err: err != nil, notEmpty: IsNotEmpty(err)}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("DeleteBucket(...): -want, +got (error %v):\n%s", err, diff)
			}
			if diff := cmp.Diff(int32(1), n.n.Load()); diff != "" {
				t.Errorf("DeleteBucket(...): requests: -want, +got:\n%s", diff)
			}
		})
	}
}

const aclXML = `<?xml version="1.0" encoding="UTF-8"?>
<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Owner><ID>proj:alice</ID><DisplayName>Alice</DisplayName></Owner>
  <AccessControlList>
    <Grant>
      <Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>proj:alice</ID><DisplayName>Alice</DisplayName></Grantee>
      <Permission>FULL_CONTROL</Permission>
    </Grant>
    <Grant>
      <Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee>
      <Permission>READ</Permission>
    </Grant>
    <Grant>
      <Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="AmazonCustomerByEmail"><EmailAddress>carol@example.com</EmailAddress></Grantee>
      <Permission>WRITE</Permission>
    </Grant>
  </AccessControlList>
</AccessControlPolicy>`

func TestGetACL(t *testing.T) {
	type want struct {
		acl      *ACL
		err      bool
		notFound bool
	}
	cases := map[string]struct {
		replies []reply
		want    want
	}{
		"Parsed": {
			replies: ok(aclXML),
			want: want{acl: &ACL{
				Owner: Owner{ID: "proj:alice", DisplayName: "Alice"},
				Grants: []Grant{
					{Permission: "FULL_CONTROL", Grantee: Grantee{Type: GranteeID, Value: "proj:alice", DisplayName: "Alice"}},
					{Permission: "READ", Grantee: Grantee{Type: GranteeURI, Value: AllUsers}},
					{Permission: "WRITE", Grantee: Grantee{Type: GranteeEmail, Value: "carol@example.com"}},
				},
			}},
		},
		"Missing": {
			replies: fail(http.StatusNotFound, "NoSuchBucket"),
			want:    want{err: true, notFound: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _, n := newTestClient(t, "", map[string][]reply{"GET /b?acl": tc.replies})
			acl, err := c.GetACL(context.Background(), bucket)
			checkNoSecrets(t, err)
			got := want{acl: acl, err: err != nil, notFound: IsNotFound(err)}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("GetACL(...): -want, +got (error %v):\n%s", err, diff)
			}
			if diff := cmp.Diff(int32(1), n.n.Load()); diff != "" {
				t.Errorf("GetACL(...): requests: -want, +got:\n%s", diff)
			}
		})
	}
}

// The AccessControlPolicy body, as far as the test looks at it.
type xmlACL struct {
	OwnerID string     `xml:"Owner>ID"`
	Grants  []xmlGrant `xml:"AccessControlList>Grant"`
}

type xmlGrant struct {
	Grantee    xmlGrantee `xml:"Grantee"`
	Permission string     `xml:"Permission"`
}

type xmlGrantee struct {
	Type  string `xml:"type,attr"`
	ID    string `xml:"ID"`
	Email string `xml:"EmailAddress"`
	URI   string `xml:"URI"`
}

func TestPutACL(t *testing.T) {
	type want struct {
		err      bool
		requests []string
		body     *xmlACL
	}
	cases := map[string]struct {
		reason  string
		acl     ACL
		replies map[string][]reply
		want    want
	}{
		"Body": {
			reason:  "The grants go in an AccessControlPolicy body, normalized, with the owner.",
			acl:     ACL{Owner: Owner{ID: "proj:alice"}, Grants: []Grant{uri("READ", "https://acs.amazonaws.com/groups/global/AllUsers"), id("FULL_CONTROL", "proj:alice"), id("FULL_CONTROL", "proj:alice"), email("WRITE", "Carol@example.com")}},
			replies: map[string][]reply{"PUT /b?acl": ok("")},
			want: want{
				requests: []string{"PUT /b?acl"},
				body: &xmlACL{OwnerID: "proj:alice", Grants: []xmlGrant{
					{Grantee: xmlGrantee{Type: "AmazonCustomerByEmail", Email: "carol@example.com"}, Permission: "WRITE"},
					{Grantee: xmlGrantee{Type: "CanonicalUser", ID: "proj:alice"}, Permission: "FULL_CONTROL"},
					{Grantee: xmlGrantee{Type: "Group", URI: AllUsers}, Permission: "READ"},
				}},
			},
		},
		"OwnerLookedUp": {
			reason:  "Without an owner ID the bucket's current owner is named.",
			acl:     ACL{Grants: []Grant{id("FULL_CONTROL", "proj:alice")}},
			replies: map[string][]reply{"GET /b?acl": ok(aclXML), "PUT /b?acl": ok("")},
			want: want{
				requests: []string{"GET /b?acl", "PUT /b?acl"},
				body:     &xmlACL{OwnerID: "proj:alice", Grants: []xmlGrant{{Grantee: xmlGrantee{Type: "CanonicalUser", ID: "proj:alice"}, Permission: "FULL_CONTROL"}}},
			},
		},
		"UnknownGranteeType": {
			reason: "A grantee type S3 does not know is refused before a request is sent.",
			acl:    ACL{Owner: Owner{ID: "proj:alice"}, Grants: []Grant{{Permission: "READ", Grantee: Grantee{Type: "user", Value: "x"}}}},
			want:   want{err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, f, _ := newTestClient(t, "", tc.replies)
			err := c.PutACL(context.Background(), bucket, tc.acl)
			got := want{err: err != nil, requests: f.keys()}
			for _, r := range f.requests() {
				if r.key != "PUT /b?acl" {
					continue
				}
				checkContentMD5(t, r)
				for h := range r.header {
					if strings.HasPrefix(strings.ToLower(h), "x-amz-grant") || strings.EqualFold(h, "x-amz-acl") {
						t.Errorf("PutACL(...) sent header %s: grants belong in the body", h)
					}
				}
				got.body = &xmlACL{}
				if err := xml.Unmarshal([]byte(r.body), got.body); err != nil {
					t.Fatalf("cannot parse the PutBucketAcl body %q: %v", r.body, err)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nPutACL(...): -want, +got (error %v):\n%s", tc.reason, err, diff)
			}
		})
	}
}

func TestGetPolicy(t *testing.T) {
	type want struct {
		policy                   string
		err                      bool
		notImplemented, notFound bool
		requests                 int32
	}
	cases := map[string]struct {
		reason  string
		replies []reply
		want    want
	}{
		"Policy": {
			reason:  "The document comes back as the server stored it.",
			replies: ok(`{"Version":"2012-10-17","Statement":[]}`),
			want:    want{policy: `{"Version":"2012-10-17","Statement":[]}`, requests: 1},
		},
		"NoPolicy": {
			reason:  "NoSuchBucketPolicy is no policy.",
			replies: fail(http.StatusNotFound, "NoSuchBucketPolicy"),
			want:    want{requests: 1},
		},
		"NoBucket": {
			reason:  "NoSuchBucket is not no policy.",
			replies: fail(http.StatusNotFound, "NoSuchBucket"),
			want:    want{err: true, notFound: true, requests: 1},
		},
		"Swift": {
			reason:  "Swift answers a bare 501: not implemented, and not retried.",
			replies: fail(http.StatusNotImplemented, ""),
			want:    want{err: true, notImplemented: true, requests: 1},
		},
		"NotImplementedWithBody": {
			reason:  "A 501 with an S3 error body is not implemented too.",
			replies: fail(http.StatusNotImplemented, "NotImplemented"),
			want:    want{err: true, notImplemented: true, requests: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _, n := newTestClient(t, "", map[string][]reply{"GET /b?policy": tc.replies})
			p, err := c.GetPolicy(context.Background(), bucket)
			checkNoSecrets(t, err)
			got := want{policy: p, err: err != nil, notImplemented: IsNotImplemented(err), notFound: IsNotFound(err), requests: n.n.Load()}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nGetPolicy(...): -want, +got (error %v):\n%s", tc.reason, err, diff)
			}
		})
	}
}

func TestDeletePolicy(t *testing.T) {
	cases := map[string]struct {
		replies []reply
		wantErr bool
	}{
		"Deleted":  {replies: []reply{{status: http.StatusNoContent}}},
		"NoPolicy": {replies: fail(http.StatusNotFound, "NoSuchBucketPolicy")},
		"NoBucket": {replies: fail(http.StatusNotFound, "NoSuchBucket"), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _, _ := newTestClient(t, "", map[string][]reply{"DELETE /b?policy": tc.replies})
			err := c.DeletePolicy(context.Background(), bucket)
			if diff := cmp.Diff(tc.wantErr, err != nil); diff != "" {
				t.Errorf("DeletePolicy(...): -want error, +got error (%v):\n%s", err, diff)
			}
		})
	}
}

func TestVersioning(t *testing.T) {
	cases := map[string]struct {
		body string
		want string
	}{
		"Never": {
			body: `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>`,
			want: "",
		},
		"Enabled": {
			body: `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>`,
			want: VersioningEnabled,
		},
		"Suspended": {
			body: `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Suspended</Status></VersioningConfiguration>`,
			want: VersioningSuspended,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _, _ := newTestClient(t, "", map[string][]reply{"GET /b?versioning": ok(tc.body)})
			got, err := c.GetVersioning(context.Background(), bucket)
			if err != nil {
				t.Fatalf("GetVersioning(...): %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GetVersioning(...): -want, +got:\n%s", diff)
			}
		})
	}
}

func TestPutVersioning(t *testing.T) {
	type want struct {
		err      bool
		requests []string
		status   string
	}
	cases := map[string]struct {
		status string
		want   want
	}{
		"Enabled":   {status: VersioningEnabled, want: want{requests: []string{"PUT /b?versioning"}, status: "Enabled"}},
		"Suspended": {status: VersioningSuspended, want: want{requests: []string{"PUT /b?versioning"}, status: "Suspended"}},
		"Empty":     {status: "", want: want{err: true}},
		"Lowercase": {status: "enabled", want: want{err: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, f, _ := newTestClient(t, "", map[string][]reply{"PUT /b?versioning": ok("")})
			err := c.PutVersioning(context.Background(), bucket, tc.status)
			got := want{err: err != nil, requests: f.keys()}
			for _, r := range f.requests() {
				checkContentMD5(t, r)
				var v struct {
					Status string `xml:"Status"`
				}
				if err := xml.Unmarshal([]byte(r.body), &v); err != nil {
					t.Fatalf("cannot parse the PutBucketVersioning body %q: %v", r.body, err)
				}
				got.status = v.Status
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("PutVersioning(...): -want, +got (error %v):\n%s", err, diff)
			}
		})
	}
}

// The multi-object delete body, as far as the test looks at it.
type xmlDelete struct {
	Quiet   bool           `xml:"Quiet"`
	Objects []xmlObjectRef `xml:"Object"`
}

type xmlObjectRef struct {
	Key       string `xml:"Key"`
	VersionID string `xml:"VersionId"`
}

const noUploads = `<ListMultipartUploadsResult><Bucket>b</Bucket><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>`

func TestEmptyBucket(t *testing.T) {
	type want struct {
		err      bool
		requests []string
		deletes  []xmlDelete
	}
	cases := map[string]struct {
		reason  string
		replies map[string][]reply
		want    want
	}{
		"Versions": {
			reason: "Every version and delete marker goes, page after page, then unfinished uploads.",
			replies: map[string][]reply{
				"GET /b?versions": ok(`<ListVersionsResult><Name>b</Name><IsTruncated>true</IsTruncated><NextKeyMarker>k2</NextKeyMarker><NextVersionIdMarker>v2</NextVersionIdMarker>` +
					`<Version><Key>k1</Key><VersionId>v1</VersionId></Version><Version><Key>k2</Key><VersionId>v2</VersionId></Version>` +
					`<DeleteMarker><Key>k0</Key><VersionId>m0</VersionId></DeleteMarker></ListVersionsResult>`),
				"GET /b?key-marker&version-id-marker&versions": ok(`<ListVersionsResult><Name>b</Name><IsTruncated>false</IsTruncated>` +
					`<Version><Key>k3</Key><VersionId>null</VersionId></Version></ListVersionsResult>`),
				"POST /b?delete": ok(`<DeleteResult/>`),
				"GET /b?uploads": ok(`<ListMultipartUploadsResult><Bucket>b</Bucket><IsTruncated>false</IsTruncated>` +
					`<Upload><Key>big</Key><UploadId>u1</UploadId></Upload></ListMultipartUploadsResult>`),
				"DELETE /b/big?uploadId": {{status: http.StatusNoContent}},
			},
			want: want{
				requests: []string{"GET /b?versions", "POST /b?delete", "GET /b?key-marker&version-id-marker&versions", "POST /b?delete", "GET /b?uploads", "DELETE /b/big?uploadId"},
				deletes: []xmlDelete{
					{Quiet: true, Objects: []xmlObjectRef{{"k1", "v1"}, {"k2", "v2"}, {"k0", "m0"}}},
					{Quiet: true, Objects: []xmlObjectRef{{"k3", "null"}}},
				},
			},
		},
		"AlreadyEmpty": {
			reason: "An empty bucket needs no delete.",
			replies: map[string][]reply{
				"GET /b?versions": ok(`<ListVersionsResult><Name>b</Name><IsTruncated>false</IsTruncated></ListVersionsResult>`),
				"GET /b?uploads":  ok(noUploads),
			},
			want: want{requests: []string{"GET /b?versions", "GET /b?uploads"}},
		},
		"NoVersionListing": {
			reason: "A server without version listing has its current objects deleted.",
			replies: map[string][]reply{
				"GET /b?versions":  fail(http.StatusNotImplemented, ""),
				"GET /b?list-type": ok(`<ListBucketResult><Name>b</Name><IsTruncated>false</IsTruncated><Contents><Key>k1</Key></Contents></ListBucketResult>`),
				"POST /b?delete":   ok(`<DeleteResult/>`),
				"GET /b?uploads":   fail(http.StatusNotImplemented, ""),
			},
			want: want{
				requests: []string{"GET /b?versions", "GET /b?list-type", "POST /b?delete", "GET /b?uploads"},
				deletes:  []xmlDelete{{Quiet: true, Objects: []xmlObjectRef{{Key: "k1"}}}},
			},
		},
		"VersionIDsRefused": {
			reason: "Swift before object versioning refuses version IDs in a multi-object delete: current objects are deleted.",
			replies: map[string][]reply{
				"GET /b?versions":        ok(`<ListVersionsResult><Name>b</Name><IsTruncated>false</IsTruncated><Version><Key>k1</Key><VersionId>null</VersionId></Version></ListVersionsResult>`),
				"POST /b?delete":         {{status: http.StatusNotImplemented, body: errXML("NotImplemented")}, {status: http.StatusOK, body: `<DeleteResult/>`}},
				"DELETE /b/k1?versionId": fail(http.StatusNotImplemented, "NotImplemented"),
				"GET /b?list-type":       ok(`<ListBucketResult><Name>b</Name><IsTruncated>false</IsTruncated><Contents><Key>k1</Key></Contents></ListBucketResult>`),
				"GET /b?uploads":         ok(noUploads),
			},
			want: want{
				requests: []string{"GET /b?versions", "POST /b?delete", "DELETE /b/k1?versionId", "GET /b?list-type", "POST /b?delete", "GET /b?uploads"},
				deletes: []xmlDelete{
					{Quiet: true, Objects: []xmlObjectRef{{"k1", "null"}}},
					{Quiet: true, Objects: []xmlObjectRef{{Key: "k1"}}},
				},
			},
		},
		"KeyErrors": {
			reason: "Keys that could not be deleted are an error; keys already gone are not.",
			replies: map[string][]reply{
				"GET /b?versions": ok(`<ListVersionsResult><Name>b</Name><IsTruncated>false</IsTruncated>` +
					`<Version><Key>k1</Key><VersionId>v1</VersionId></Version><Version><Key>k2</Key><VersionId>v2</VersionId></Version></ListVersionsResult>`),
				"POST /b?delete": ok(`<DeleteResult><Error><Key>k1</Key><VersionId>v1</VersionId><Code>NoSuchVersion</Code><Message>gone</Message></Error>` +
					`<Error><Key>k2</Key><VersionId>v2</VersionId><Code>AccessDenied</Code><Message>Access Denied</Message></Error></DeleteResult>`),
			},
			want: want{
				err:      true,
				requests: []string{"GET /b?versions", "POST /b?delete"},
				deletes:  []xmlDelete{{Quiet: true, Objects: []xmlObjectRef{{"k1", "v1"}, {"k2", "v2"}}}},
			},
		},
		"Missing": {
			reason:  "A missing bucket gives IsNotFound.",
			replies: map[string][]reply{"GET /b?versions": fail(http.StatusNotFound, "NoSuchBucket")},
			want:    want{err: true, requests: []string{"GET /b?versions"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, f, _ := newTestClient(t, "", tc.replies)
			err := c.EmptyBucket(context.Background(), bucket)
			checkNoSecrets(t, err)
			got := want{err: err != nil, requests: f.keys()}
			for _, r := range f.requests() {
				if r.key != "POST /b?delete" {
					continue
				}
				checkContentMD5(t, r)
				var d xmlDelete
				if err := xml.Unmarshal([]byte(r.body), &d); err != nil {
					t.Fatalf("cannot parse the DeleteObjects body %q: %v", r.body, err)
				}
				got.deletes = append(got.deletes, d)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nEmptyBucket(...): -want, +got (error %v):\n%s", tc.reason, err, diff)
			}
		})
	}
}

// TestRetries checks that 4xx answers are final, and transient errors are retried
// at most three times in all.
func TestRetries(t *testing.T) {
	const enabled = `<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`
	cases := map[string]struct {
		replies      []reply
		wantErr      bool
		wantRequests int32
	}{
		"BadRequestRequestTimeout": {
			// The SDK retries the RequestTimeout code by default.
			replies:      fail(http.StatusBadRequest, "RequestTimeout"),
			wantErr:      true,
			wantRequests: 1,
		},
		"BadRequestThrottling": {
			replies:      fail(http.StatusBadRequest, "Throttling"),
			wantErr:      true,
			wantRequests: 1,
		},
		"Forbidden": {
			replies:      fail(http.StatusForbidden, "AccessDenied"),
			wantErr:      true,
			wantRequests: 1,
		},
		"NotFound": {
			replies:      fail(http.StatusNotFound, "NoSuchBucket"),
			wantErr:      true,
			wantRequests: 1,
		},
		"ServerErrorRecovers": {
			replies:      []reply{{status: http.StatusInternalServerError, body: errXML("InternalError")}, {status: http.StatusOK, body: enabled}},
			wantRequests: 2,
		},
		"SlowDownRecovers": {
			replies:      []reply{{status: http.StatusServiceUnavailable, body: errXML("SlowDown")}, {status: http.StatusOK, body: enabled}},
			wantRequests: 2,
		},
		"ServerErrorGivesUp": {
			replies:      fail(http.StatusInternalServerError, "InternalError"),
			wantErr:      true,
			wantRequests: 3,
		},
		"BadGatewayGivesUp": {
			replies:      fail(http.StatusBadGateway, ""),
			wantErr:      true,
			wantRequests: 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _, n := newTestClient(t, "", map[string][]reply{"GET /b?versioning": tc.replies})
			_, err := c.GetVersioning(context.Background(), bucket)
			checkNoSecrets(t, err)
			if diff := cmp.Diff(tc.wantErr, err != nil); diff != "" {
				t.Errorf("GetVersioning(...): -want error, +got error (%v):\n%s", err, diff)
			}
			if diff := cmp.Diff(tc.wantRequests, n.n.Load()); diff != "" {
				t.Errorf("GetVersioning(...): requests: -want, +got:\n%s", diff)
			}
		})
	}
}

// TestConnectionErrorHidesCredentials checks the one error that shows a URL.
func TestConnectionErrorHidesCredentials(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := srv.URL
	srv.Close()
	c, err := New(Config{Endpoint: endpoint, AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}, withRetryBackoff(noDelay))
	if err != nil {
		t.Fatalf("New(...): %v", err)
	}
	_, err = c.GetACL(context.Background(), bucket)
	if err == nil {
		t.Fatal("GetACL(...) on a closed server: want an error")
	}
	checkNoSecrets(t, err)
}
