package openstack

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
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
	// Owner is the UID of the managed resource the credential was made for, kept in the
	// credential's blob: keys are bound to the Contract that made them, so that a tenant
	// naming another's access key (an external name is no secret) gets nothing.
	Owner string `json:"-"`
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
	// GetEC2Credential returns the credential, secret and owner included (Keystone returns
	// them to the user it belongs to), or an error for which IsNotFound is true.
	GetEC2Credential(ctx context.Context, userID, access string) (*EC2Credential, error)
	DeleteEC2Credential(ctx context.Context, userID, access string) error
}

type keystone struct {
	provider *gophercloud.ProviderClient
	c        *gophercloud.ServiceClient
}

var _ EC2Credentials = &keystone{}

func (k *keystone) WhoAmI() (string, string, error) { return whoAmI(k.provider) }

// whoAmI returns the user and project the provider client authenticated as.
func whoAmI(provider *gophercloud.ProviderClient) (string, string, error) {
	r, ok := provider.GetAuthResult().(tokens.CreateResult)
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
	blob, err := json.Marshal(ec2Blob{Access: c.Access, Secret: c.Secret, Owner: c.Owner}) //nolint:gosec // The blob is the credential Keystone stores; it goes nowhere else.
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

// ec2Blob is an EC2 credential's blob: the keys, and the owner the provider adds.
type ec2Blob struct {
	Access  string  `json:"access"`
	Secret  string  `json:"secret"`
	TrustID *string `json:"trust_id"`
	Owner   string  `json:"crossplane_uid,omitempty"`
}

// GetEC2Credential reads the credential through the generic credentials API (its ID is the
// SHA-256 of the access key), the only one that shows the whole blob, owner included.
func (k *keystone) GetEC2Credential(ctx context.Context, userID, access string) (*EC2Credential, error) {
	id := sha256.Sum256([]byte(access))
	var body struct {
		Credential struct {
			Type      string `json:"type"`
			UserID    string `json:"user_id"`
			ProjectID string `json:"project_id"`
			Blob      string `json:"blob"`
		} `json:"credential"`
	}
	if _, err := k.c.Get(ctx, k.c.ServiceURL("credentials", hex.EncodeToString(id[:])), &body, nil); err != nil {
		if !gophercloud.ResponseCodeIs(err, http.StatusForbidden) {
			return nil, err
		}
		// Keystone answers 403, not 404, for a credential that does not exist (its policy
		// has no owner to check). OS-EC2 tells the two apart; a credential only it shows
		// has no owner the provider can read, so it is no Contract's.
		var ec2 struct {
			Credential EC2Credential `json:"credential"`
		}
		if _, err := k.c.Get(ctx, k.c.ServiceURL("users", userID, "credentials", "OS-EC2", access), &ec2, nil); err != nil {
			return nil, err
		}
		return &EC2Credential{Access: ec2.Credential.Access, UserID: ec2.Credential.UserID, ProjectID: ec2.Credential.ProjectID}, nil
	}
	c := body.Credential
	var blob ec2Blob
	if c.Type != "ec2" || c.UserID != userID || json.Unmarshal([]byte(c.Blob), &blob) != nil || blob.Access != access {
		// Not an EC2 credential of this user: as good as missing.
		return nil, gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusNotFound, Expected: []int{http.StatusOK}}
	}
	return &EC2Credential{Access: blob.Access, Secret: blob.Secret, UserID: c.UserID, ProjectID: c.ProjectID, Owner: blob.Owner}, nil
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
