package openstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
	// CreateEC2Credential creates the credential with the access and secret keys it holds
	// (see NewEC2Keys): the caller chooses them, so it can record the access key before the
	// credential exists, and a create interrupted by a crash leaves nothing it cannot find.
	// Creating a credential that exists already is not an error.
	CreateEC2Credential(ctx context.Context, c EC2Credential) error
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

// CreateEC2Credential uses Keystone's generic credentials API, which (unlike OS-EC2, which
// makes up the keys) takes the keys from the caller. Keystone derives an EC2 credential's ID
// from its access key, so OS-EC2 reads and deletes it like any other, and a second create of
// the same keys answers 409.
func (k *keystone) CreateEC2Credential(ctx context.Context, c EC2Credential) error {
	blob, err := json.Marshal(map[string]any{"access": c.Access, "secret": c.Secret, "trust_id": nil})
	if err != nil {
		return err
	}
	body := map[string]any{"credential": map[string]any{
		"type": "ec2", "user_id": c.UserID, "project_id": c.ProjectID, "blob": string(blob),
	}}
	_, err = k.c.Post(ctx, k.c.ServiceURL("credentials"), body, nil, &gophercloud.RequestOpts{OkCodes: []int{http.StatusCreated}})
	if IsConflict(err) {
		return nil
	}
	return err
}

// NewEC2Keys returns a fresh access and secret key, 128 bits of randomness each, spelled as
// Keystone spells the keys it makes (32 hex digits).
func NewEC2Keys() (access, secret string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	return hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:]), nil
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
