package openstack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errNewProviderClient = "cannot create an OpenStack client for the auth_url"
	errAuthenticate      = "cannot authenticate to Keystone"
	errNetworkEndpoint   = "cannot find the network (Neutron) endpoint in the Keystone catalog"

	// requestTimeout bounds one HTTP exchange, so a hung backend cannot hold a reconcile.
	requestTimeout = 60 * time.Second
)

// SessionOptions tune how sessions talk to OpenStack.
type SessionOptions struct {
	// WrapTransport, when set, wraps the transport of every session: the provider counts its
	// requests with it (httpmetrics), tests theirs.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// UserAgent is prepended to gophercloud's.
	UserAgent string
}

// A Session is an authenticated connection to one OpenStack cloud. It re-authenticates by
// itself when its token expires, and is safe for concurrent use.
type Session struct {
	provider   *gophercloud.ProviderClient
	endpoint   gophercloud.EndpointOpts
	network    *gophercloud.ServiceClient
	extensions *extensionCache
	s3         S3Settings

	listingOnce sync.Once
	listing     *GroupListing

	portListingOnce sync.Once
	portListing     *PortListing
}

// S3Settings locate the S3 API when the catalog is not enough.
type S3Settings struct {
	Endpoint string
	Region   string
}

// NewSession logs in to Keystone and looks up the endpoints the provider uses.
func NewSession(ctx context.Context, c *Cloud, o SessionOptions) (*Session, error) {
	pc, err := openstack.NewClient(c.Auth.IdentityEndpoint)
	if err != nil {
		return nil, errors.Wrap(err, errNewProviderClient)
	}
	base := http.DefaultTransport.(*http.Transport).Clone() //nolint:forcetypeassert // The standard library's default.
	if c.TLS != nil {
		base.TLSClientConfig = c.TLS.Clone()
	}
	var rt http.RoundTripper = base
	if o.WrapTransport != nil {
		rt = o.WrapTransport(rt)
	}
	pc.HTTPClient = http.Client{Transport: rt, Timeout: requestTimeout}
	if o.UserAgent != "" {
		pc.UserAgent.Prepend(o.UserAgent)
	}
	if err := openstack.Authenticate(ctx, pc, c.Auth); err != nil {
		return nil, errors.Wrap(err, errAuthenticate)
	}
	network, err := openstack.NewNetworkV2(pc, c.Endpoint)
	if err != nil {
		return nil, errors.Wrap(err, errNetworkEndpoint)
	}
	return &Session{provider: pc, endpoint: c.Endpoint, network: network, extensions: &extensionCache{}, s3: c.S3}, nil
}

// SecurityGroups returns the session's Neutron security group API.
func (s *Session) SecurityGroups() SecurityGroups { return s.neutron() }

// Ports returns the session's Neutron port API.
func (s *Session) Ports() Ports { return s.neutron() }

func (s *Session) neutron() *neutron { return &neutron{c: s.network, extensions: s.extensions} }

// GroupListing returns the session's listing of its project's security groups, made on the
// first call with maxAge (the callers of one session share it, so they share their lists).
func (s *Session) GroupListing(maxAge time.Duration) *GroupListing {
	s.listingOnce.Do(func() {
		n := s.neutron()
		q := s.ownProject()
		s.listing = NewGroupListing(maxAge,
			func(ctx context.Context) ([]SecurityGroup, error) {
				return n.listSecurityGroups(ctx, q, func(SecurityGroup) bool { return true })
			},
			n.GetSecurityGroup)
	})
	return s.listing
}

// PortListing returns the session's listing of its project's ports, made on the first call
// with maxAge (the attachments of one session share it, so they share their lists). Ports of
// servers in other projects, which an admin's token may name, are read on their own.
func (s *Session) PortListing(maxAge time.Duration) *PortListing {
	s.portListingOnce.Do(func() {
		n := s.neutron()
		q := s.ownProject()
		s.portListing = NewPortListing(maxAge,
			func(ctx context.Context) ([]Port, error) { return n.listPorts(ctx, q) },
			n.ListPortsOfDevices)
	})
	return s.portListing
}

// ownProject is the query that keeps a list to the session's project: an admin's token sees
// every project's resources.
func (s *Session) ownProject() url.Values {
	q := url.Values{}
	if _, project, err := whoAmI(s.provider); err == nil {
		q.Set("project_id", project)
	}
	return q
}

// Networks returns the session's Neutron API for members' ports.
func (s *Session) Networks() Networks { return s.neutron() }

// Compute returns the session's Nova API. Clouds without Nova fail here, not at login: only
// resources that make servers need it.
func (s *Session) Compute() (Compute, error) {
	c, err := openstack.NewComputeV2(s.provider, s.endpoint)
	if err != nil {
		return nil, errors.Wrap(err, errComputeEndpoint)
	}
	c.Microversion = ComputeMicroversion
	return &nova{c: c}, nil
}

// Images returns the session's Glance API.
func (s *Session) Images() (Images, error) {
	c, err := openstack.NewImageV2(s.provider, s.endpoint)
	if err != nil {
		return nil, errors.Wrap(err, errImageEndpoint)
	}
	return &glance{c: c}, nil
}

// Volumes returns the session's Cinder API. Clouds without Cinder fail here: only clusters
// whose members boot from volumes need it.
func (s *Session) Volumes() (Volumes, error) {
	c, err := openstack.NewBlockStorageV3(s.provider, s.endpoint)
	if err != nil {
		return nil, errors.Wrap(err, errVolumeEndpoint)
	}
	return &cinder{c: c}, nil
}

// A SessionCache keeps one Session per ProviderConfig, so that reconciles reuse a token instead
// of logging in every time. A session is replaced when the ProviderConfig or its credentials
// change: the fingerprint of both is part of the cache entry.
type SessionCache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
	opts    SessionOptions
}

type cacheEntry struct {
	mu          sync.Mutex // serialises logins for one config
	fingerprint string
	session     *Session
}

// NewSessionCache returns an empty cache whose sessions use the supplied options.
func NewSessionCache(o SessionOptions) *SessionCache {
	return &SessionCache{entries: map[string]*cacheEntry{}, opts: o}
}

// Fingerprint hashes everything a session depends on, so credentials never sit in memory as a
// map key.
func Fingerprint(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		_, _ = h.Write(p)
		_, _ = h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Get returns the session cached for key if its fingerprint matches, or logs in anew with the
// cloud that newCloud returns. Concurrent callers for one key wait for a single login.
func (c *SessionCache) Get(ctx context.Context, key, fingerprint string, newCloud func() (*Cloud, error)) (*Session, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		e = &cacheEntry{}
		c.entries[key] = e
	}
	c.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session != nil && e.fingerprint == fingerprint {
		return e.session, nil
	}
	cloud, err := newCloud()
	if err != nil {
		return nil, err
	}
	s, err := NewSession(ctx, cloud, c.opts)
	if err != nil {
		return nil, err
	}
	e.session, e.fingerprint = s, fingerprint
	return s, nil
}

// Len reports how many configs have a session.
func (c *SessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.entries {
		if e.session != nil {
			n++
		}
	}
	return n
}
