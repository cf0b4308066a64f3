package openstack

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errIdentityEndpoint = "cannot find the identity (Keystone) endpoint"
	errWhoAmI           = "cannot tell which user and project the credentials authenticate as"
	errObjectStore      = "cannot find the object-store endpoint in the Keystone catalog: set spec.objectStorage.endpoint in the ProviderConfig"

	// DefaultS3Region is the region S3 clients sign for when the ProviderConfig names none:
	// Swift's s3api and most S3 servers default their location to it.
	DefaultS3Region = "us-east-1"
)

// An EC2Credential is a Keystone EC2 credential: S3 access keys that Swift's S3 API (and Ceph
// RGW with Keystone) accept.
type EC2Credential struct {
	Access    string `json:"access"`
	Secret    string `json:"secret"`
	UserID    string `json:"user_id"`
	ProjectID string `json:"tenant_id"`
}

// EC2Credentials is the part of Keystone's API that manages EC2 credentials.
type EC2Credentials interface {
	// WhoAmI returns the user and project the session authenticated as.
	WhoAmI() (userID, projectID string, err error)
	CreateEC2Credential(ctx context.Context, userID, projectID string) (*EC2Credential, error)
	// GetEC2Credential returns the credential, secret included (Keystone returns it to the
	// owner), or an error for which IsNotFound is true.
	GetEC2Credential(ctx context.Context, userID, access string) (*EC2Credential, error)
	DeleteEC2Credential(ctx context.Context, userID, access string) error
}

type keystone struct {
	provider *gophercloud.ProviderClient
	c        *gophercloud.ServiceClient
}

var _ EC2Credentials = &keystone{}

func (k *keystone) WhoAmI() (string, string, error) {
	r, ok := k.provider.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return "", "", errors.New(errWhoAmI)
	}
	u, err := r.ExtractUser()
	if err != nil {
		return "", "", errors.Wrap(err, errWhoAmI)
	}
	p, err := r.ExtractProject()
	if err != nil || p == nil {
		return "", "", errors.New(errWhoAmI + ": the token has no project scope")
	}
	return u.ID, p.ID, nil
}

func (k *keystone) CreateEC2Credential(ctx context.Context, userID, projectID string) (*EC2Credential, error) {
	var body struct {
		Credential EC2Credential `json:"credential"`
	}
	_, err := k.c.Post(ctx, k.c.ServiceURL("users", userID, "credentials", "OS-EC2"), map[string]string{"tenant_id": projectID}, &body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusCreated}})
	if err != nil {
		return nil, err
	}
	return &body.Credential, nil
}

func (k *keystone) GetEC2Credential(ctx context.Context, userID, access string) (*EC2Credential, error) {
	var body struct {
		Credential EC2Credential `json:"credential"`
	}
	if _, err := k.c.Get(ctx, k.c.ServiceURL("users", userID, "credentials", "OS-EC2", access), &body, nil); err != nil {
		return nil, err
	}
	return &body.Credential, nil
}

func (k *keystone) DeleteEC2Credential(ctx context.Context, userID, access string) error {
	_, err := k.c.Delete(ctx, k.c.ServiceURL("users", userID, "credentials", "OS-EC2", access), nil)
	return err
}

// EC2Credentials returns the session's Keystone EC2 credential API.
func (s *Session) EC2Credentials() (EC2Credentials, error) {
	c, err := openstack.NewIdentityV3(s.provider, s.endpoint)
	if err != nil {
		return nil, errors.Wrap(err, errIdentityEndpoint)
	}
	return &keystone{provider: s.provider, c: c}, nil
}

// S3Endpoint returns where the cloud's S3 API is and the region to sign for: the
// ProviderConfig's settings, else the scheme and host of the catalog's object-store
// endpoint (Swift serves S3 at its root).
func (s *Session) S3Endpoint() (endpoint, region string, err error) {
	region = s.s3.Region
	if region == "" {
		region = DefaultS3Region
	}
	if s.s3.Endpoint != "" {
		return strings.TrimSuffix(s.s3.Endpoint, "/"), region, nil
	}
	c, err := openstack.NewObjectStorageV1(s.provider, s.endpoint)
	if err != nil {
		return "", "", errors.Wrap(err, errObjectStore)
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return "", "", errors.Wrap(err, errObjectStore)
	}
	return u.Scheme + "://" + u.Host, region, nil
}
