package s3

import (
	"context"
	"net/http"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errCreateBucket        = "cannot create the bucket"
	errHeadBucket          = "cannot tell whether the bucket exists"
	errHeadForbidden       = "the server refuses to show the bucket: it belongs to someone else, or the credentials are wrong"
	errDeleteBucket        = "cannot delete the bucket"
	errListVersions        = "cannot list the bucket's object versions"
	errListObjects         = "cannot list the bucket's objects"
	errListUploads         = "cannot list the bucket's multipart uploads"
	errAbortUpload         = "cannot abort a multipart upload"
	errDeleteObjects       = "cannot delete objects from the bucket"
	errFmtDeleteObjects    = "cannot delete %d objects from the bucket, the first %q: %s: %s"
	errGetACL              = "cannot get the bucket ACL"
	errPutACL              = "cannot set the bucket ACL"
	errFmtGranteeType      = "unknown grantee type %q: want id, emailAddress or uri"
	errGetPolicy           = "cannot get the bucket policy"
	errPutPolicy           = "cannot set the bucket policy"
	errDeletePolicy        = "cannot delete the bucket policy"
	errGetVersioning       = "cannot get the bucket's versioning status"
	errPutVersioning       = "cannot set the bucket's versioning status"
	errFmtVersioningStatus = "unknown versioning status %q: want Enabled or Suspended"

	// VersioningEnabled and VersioningSuspended are the versioning states a bucket
	// can be put in. A bucket that never had versioning reports "".
	VersioningEnabled   = "Enabled"
	VersioningSuspended = "Suspended"

	// maxDeleteKeys is how many keys one DeleteObjects request may name.
	maxDeleteKeys = 1000
)

// Buckets is the part of the S3 API the provider uses: small, so that controllers
// can be tested with a fake.
type Buckets interface {
	// CreateBucket creates a bucket. A bucket the caller already owns is success.
	// A bucket someone else owns returns an error for which IsOwnedByAnother is true.
	CreateBucket(ctx context.Context, name string) error
	// BucketExists tells whether the bucket exists and the caller may read it.
	BucketExists(ctx context.Context, name string) (bool, error)
	// DeleteBucket deletes an empty bucket; a bucket with objects gives an error for which
	// IsNotEmpty is true. A missing bucket is success.
	DeleteBucket(ctx context.Context, name string) error
	// EmptyBucket deletes every object and every object version and delete marker.
	EmptyBucket(ctx context.Context, name string) error
	// GetACL returns the bucket's owner and grants. A missing bucket gives IsNotFound.
	GetACL(ctx context.Context, name string) (*ACL, error)
	// PutACL replaces the bucket's ACL with the grants (owner included), using the
	// AccessControlPolicy request body (not grant headers: some servers reject id= forms).
	PutACL(ctx context.Context, name string, acl ACL) error
	// PutCannedACL sets a canned ACL (private, public-read, ...).
	PutCannedACL(ctx context.Context, name, canned string) error
	// GetPolicy returns the bucket policy document, "" when the bucket has none. A server
	// without bucket policies (Swift answers 501) gives IsNotImplemented.
	GetPolicy(ctx context.Context, name string) (string, error)
	PutPolicy(ctx context.Context, name, policy string) error
	DeletePolicy(ctx context.Context, name string) error
	// GetVersioning returns "Enabled", "Suspended" or "" (never enabled).
	GetVersioning(ctx context.Context, name string) (string, error)
	PutVersioning(ctx context.Context, name, status string) error
}

// CreateBucket creates the bucket in the client's region. BucketAlreadyOwnedByYou
// is success. BucketAlreadyExists is checked against the caller's own buckets
// before it is believed, because Swift's s3api (without s3_acl, or before it learnt
// BucketAlreadyOwnedByYou) answers it for a container of the caller's own project.
func (c *Client) CreateBucket(ctx context.Context, name string) error {
	// Servers that follow S3's current default (ACLs disabled: BucketOwnerEnforced) would
	// refuse every ACL call on the new bucket; ask for ACLs to stay usable.
	in := &awss3.CreateBucketInput{Bucket: aws.String(name), ObjectOwnership: types.ObjectOwnershipBucketOwnerPreferred}
	if c.region != DefaultRegion {
		// us-east-1 is the one region S3 wants no LocationConstraint for.
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(c.region)}
	}
	_, err := c.s3.CreateBucket(ctx, in)
	switch {
	case err == nil, isAlreadyOwnedByYou(err):
		return nil
	case IsOwnedByAnother(err):
		if owned, lerr := c.ownsBucket(ctx, name); lerr == nil && owned {
			return nil
		}
	}
	return errors.Wrap(err, errCreateBucket)
}

// ownsBucket tells whether the caller owns the bucket: its ACL's owner is the caller (the
// owner ListBuckets reports). Listing alone is not enough: an admin sees every bucket.
func (c *Client) ownsBucket(ctx context.Context, name string) (bool, error) {
	out, err := c.s3.ListBuckets(ctx, &awss3.ListBucketsInput{MaxBuckets: aws.Int32(1)})
	if err != nil || out.Owner == nil {
		return false, err
	}
	acl, err := c.GetACL(ctx, name)
	if err != nil {
		return false, err
	}
	return acl.Owner.ID == aws.ToString(out.Owner.ID), nil
}

// PutCannedACL sets a canned ACL: some servers (versitygw) can make a bucket public only
// this way, not with a grant list.
func (c *Client) PutCannedACL(ctx context.Context, name, canned string) error {
	_, err := c.s3.PutBucketAcl(ctx, &awss3.PutBucketAclInput{Bucket: aws.String(name), ACL: types.BucketCannedACL(canned)})
	return errors.Wrap(err, errPutACL)
}

// BucketExists tells whether the bucket exists and the caller may read it. A 403
// is an error, not false: a HEAD response has no body, so a bucket of someone else
// cannot be told apart from refused credentials.
func (c *Client) BucketExists(ctx context.Context, name string) (bool, error) {
	_, err := c.s3.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String(name)})
	switch {
	case err == nil:
		return true, nil
	case IsNotFound(err):
		return false, nil
	case statusCode(err) == http.StatusForbidden:
		return false, errors.Wrap(err, errHeadForbidden)
	}
	return false, errors.Wrap(err, errHeadBucket)
}

// DeleteBucket deletes the bucket; one that is already gone is success.
func (c *Client) DeleteBucket(ctx context.Context, name string) error {
	_, err := c.s3.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String(name)})
	if err == nil || IsNotFound(err) {
		return nil
	}
	return errors.Wrap(err, errDeleteBucket)
}

// EmptyBucket deletes every object version and delete marker (every object, on a
// server without versioning), and aborts unfinished multipart uploads. Objects
// written meanwhile may survive: DeleteBucket then says IsNotEmpty and the caller
// tries again.
func (c *Client) EmptyBucket(ctx context.Context, name string) error {
	err := c.deleteVersions(ctx, name)
	if IsNotImplemented(err) {
		// A server without version listing, or whose multi-object delete refuses
		// version IDs (Swift before object versioning): delete current objects.
		err = c.deleteObjects(ctx, name)
	}
	if err != nil {
		return err
	}
	return c.abortUploads(ctx, name)
}

func (c *Client) deleteVersions(ctx context.Context, name string) error {
	p := awss3.NewListObjectVersionsPaginator(c.s3, &awss3.ListObjectVersionsInput{Bucket: aws.String(name)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return errors.Wrap(err, errListVersions)
		}
		ids := make([]types.ObjectIdentifier, 0, len(out.Versions)+len(out.DeleteMarkers))
		for _, v := range out.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range out.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		if err := c.deleteBatch(ctx, name, ids); err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) deleteObjects(ctx context.Context, name string) error {
	p := awss3.NewListObjectsV2Paginator(c.s3, &awss3.ListObjectsV2Input{Bucket: aws.String(name)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return errors.Wrap(err, errListObjects)
		}
		ids := make([]types.ObjectIdentifier, 0, len(out.Contents))
		for _, o := range out.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		if err := c.deleteBatch(ctx, name, ids); err != nil {
			return err
		}
	}
	return nil
}

// deleteBatch deletes the objects with multi-object deletes, or one by one on a
// server that has no multi-object delete.
func (c *Client) deleteBatch(ctx context.Context, name string, ids []types.ObjectIdentifier) error {
	for chunk := range slices.Chunk(ids, maxDeleteKeys) {
		out, err := c.s3.DeleteObjects(ctx, &awss3.DeleteObjectsInput{
			Bucket: aws.String(name),
			Delete: &types.Delete{Objects: chunk, Quiet: aws.Bool(true)},
		})
		if IsNotImplemented(err) {
			if err := c.deleteOneByOne(ctx, name, chunk); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return errors.Wrap(err, errDeleteObjects)
		}
		if err := deleteErrors(out.Errors); err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) deleteOneByOne(ctx context.Context, name string, ids []types.ObjectIdentifier) error {
	for _, id := range ids {
		_, err := c.s3.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(name), Key: id.Key, VersionId: id.VersionId})
		if err != nil && !isGone(errorCode(err)) {
			return errors.Wrap(err, errDeleteObjects)
		}
	}
	return nil
}

// deleteErrors turns the per-key errors of a multi-object delete into one error,
// ignoring keys that someone else deleted meanwhile.
func deleteErrors(errs []types.Error) error {
	errs = slices.DeleteFunc(slices.Clone(errs), func(e types.Error) bool { return isGone(aws.ToString(e.Code)) })
	if len(errs) == 0 {
		return nil
	}
	e := errs[0]
	return errors.Errorf(errFmtDeleteObjects, len(errs), aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
}

func isGone(code string) bool {
	return code == "NoSuchKey" || code == "NoSuchVersion"
}

func (c *Client) abortUploads(ctx context.Context, name string) error {
	ups, err := c.ListUploads(ctx, name, "")
	if IsNotImplemented(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, u := range ups {
		if err := c.AbortUpload(ctx, name, u); err != nil {
			return err
		}
	}
	return nil
}

// GetACL returns the bucket's owner and grants as the server reports them.
func (c *Client) GetACL(ctx context.Context, name string) (*ACL, error) {
	out, err := c.s3.GetBucketAcl(ctx, &awss3.GetBucketAclInput{Bucket: aws.String(name)})
	if err != nil {
		return nil, errors.Wrap(err, errGetACL)
	}
	acl := &ACL{}
	if out.Owner != nil {
		acl.Owner = Owner{ID: aws.ToString(out.Owner.ID), DisplayName: aws.ToString(out.Owner.DisplayName)}
	}
	for _, g := range out.Grants {
		if g.Grantee == nil {
			continue
		}
		acl.Grants = append(acl.Grants, Grant{Permission: string(g.Permission), Grantee: fromSDKGrantee(*g.Grantee)})
	}
	return acl, nil
}

// PutACL replaces the bucket's ACL with acl's grants, de-duplicated. The request
// names acl.Owner as the owner, or the bucket's current owner when acl.Owner has no
// ID, because the AccessControlPolicy body must name one.
func (c *Client) PutACL(ctx context.Context, name string, acl ACL) error {
	owner := acl.Owner
	if owner.ID == "" {
		cur, err := c.GetACL(ctx, name)
		if err != nil {
			return errors.Wrap(err, errPutACL)
		}
		owner = cur.Owner
	}
	grants := make([]types.Grant, 0, len(acl.Grants))
	for _, g := range NormalizeGrants(acl.Grants) {
		sg, err := toSDKGrant(g)
		if err != nil {
			return errors.Wrap(err, errPutACL)
		}
		grants = append(grants, sg)
	}
	o := &types.Owner{ID: aws.String(owner.ID)}
	if owner.DisplayName != "" {
		o.DisplayName = aws.String(owner.DisplayName)
	}
	_, err := c.s3.PutBucketAcl(ctx, &awss3.PutBucketAclInput{
		Bucket:              aws.String(name),
		AccessControlPolicy: &types.AccessControlPolicy{Owner: o, Grants: grants},
	})
	return errors.Wrap(err, errPutACL)
}

func fromSDKGrantee(g types.Grantee) Grantee {
	out := Grantee{DisplayName: aws.ToString(g.DisplayName)}
	switch {
	case g.Type == types.TypeCanonicalUser, g.Type == "" && g.ID != nil:
		out.Type, out.Value = GranteeID, aws.ToString(g.ID)
	case g.Type == types.TypeAmazonCustomerByEmail, g.Type == "" && g.EmailAddress != nil:
		out.Type, out.Value = GranteeEmail, aws.ToString(g.EmailAddress)
	case g.Type == types.TypeGroup && g.URI == nil && g.ID != nil:
		// versitygw names groups by ID (all-users) instead of URI.
		out.Type, out.Value = GranteeURI, groupURIOfID(aws.ToString(g.ID))
	case g.Type == types.TypeGroup, g.Type == "" && g.URI != nil:
		out.Type, out.Value = GranteeURI, aws.ToString(g.URI)
	default:
		out.Type = string(g.Type)
	}
	return out
}

// groupIDs are the group IDs versitygw reports instead of the S3 group URIs.
var groupIDs = map[string]string{"all-users": AllUsers, "authenticated-users": AuthenticatedUsers}

func groupURIOfID(id string) string {
	if u, ok := groupIDs[id]; ok {
		return u
	}
	return id
}

func toSDKGrant(g Grant) (types.Grant, error) {
	sg := types.Grant{Permission: types.Permission(g.Permission), Grantee: &types.Grantee{}}
	switch normalizeGranteeType(g.Grantee.Type) {
	case GranteeID:
		sg.Grantee.Type, sg.Grantee.ID = types.TypeCanonicalUser, aws.String(g.Grantee.Value)
	case GranteeEmail:
		sg.Grantee.Type, sg.Grantee.EmailAddress = types.TypeAmazonCustomerByEmail, aws.String(g.Grantee.Value)
	case GranteeURI:
		sg.Grantee.Type, sg.Grantee.URI = types.TypeGroup, aws.String(g.Grantee.Value)
	default:
		return types.Grant{}, errors.Errorf(errFmtGranteeType, g.Grantee.Type)
	}
	return sg, nil
}

// GetPolicy returns the bucket policy, "" when the bucket has none.
func (c *Client) GetPolicy(ctx context.Context, name string) (string, error) {
	out, err := c.s3.GetBucketPolicy(ctx, &awss3.GetBucketPolicyInput{Bucket: aws.String(name)})
	switch {
	case err == nil:
		return aws.ToString(out.Policy), nil
	case isNoSuchBucketPolicy(err):
		return "", nil
	}
	return "", errors.Wrap(err, errGetPolicy)
}

// PutPolicy replaces the bucket policy with the document.
func (c *Client) PutPolicy(ctx context.Context, name, policy string) error {
	_, err := c.s3.PutBucketPolicy(ctx, &awss3.PutBucketPolicyInput{Bucket: aws.String(name), Policy: aws.String(policy)})
	return errors.Wrap(err, errPutPolicy)
}

// DeletePolicy removes the bucket policy; a bucket without one is success.
func (c *Client) DeletePolicy(ctx context.Context, name string) error {
	_, err := c.s3.DeleteBucketPolicy(ctx, &awss3.DeleteBucketPolicyInput{Bucket: aws.String(name)})
	if err == nil || isNoSuchBucketPolicy(err) {
		return nil
	}
	return errors.Wrap(err, errDeletePolicy)
}

// GetVersioning returns VersioningEnabled, VersioningSuspended or "" for a bucket
// that never had versioning.
func (c *Client) GetVersioning(ctx context.Context, name string) (string, error) {
	out, err := c.s3.GetBucketVersioning(ctx, &awss3.GetBucketVersioningInput{Bucket: aws.String(name)})
	if err != nil {
		return "", errors.Wrap(err, errGetVersioning)
	}
	return string(out.Status), nil
}

// PutVersioning sets versioning to VersioningEnabled or VersioningSuspended. Any
// other status is refused before a request is sent: versioning, once enabled, can
// only be suspended, never turned back to "".
func (c *Client) PutVersioning(ctx context.Context, name, status string) error {
	if status != VersioningEnabled && status != VersioningSuspended {
		return errors.Errorf(errFmtVersioningStatus, status)
	}
	_, err := c.s3.PutBucketVersioning(ctx, &awss3.PutBucketVersioningInput{
		Bucket:                  aws.String(name),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatus(status)},
	})
	return errors.Wrap(err, errPutVersioning)
}
