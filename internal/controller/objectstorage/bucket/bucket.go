// Package bucket reconciles Buckets: S3 buckets whose ACL, policy and versioning are kept as
// declared, compared by meaning so that nothing is re-written when nothing differs.
package bucket

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
)

const (
	errNewClient         = "cannot create an S3 client"
	errGetACL            = "cannot get the bucket ACL"
	errGetPolicy         = "cannot get the bucket policy"
	errGetVersioning     = "cannot get the bucket versioning"
	errPolicyJSON        = "spec.forProvider.policy is not a valid policy document"
	errFmtOwnedElsewhere = "bucket name %q is taken by another account: choose another spec.forProvider.bucketName (the provider never adopts a bucket it does not own)"
	errFmtExistsUnowned  = "bucket %q already exists in this account and this Bucket did not create it, so it is left alone: set spec.forProvider.adoptExisting: true to manage it with the objects it holds (deleting the Bucket then deletes it too, if it is empty or forceDestroy is set), or choose another spec.forProvider.bucketName"
	errCreate            = "cannot create the bucket"
	errPutACL            = "cannot set the bucket ACL"
	errPutPolicy         = "cannot set the bucket policy"
	errDeletePolicy      = "cannot delete the bucket policy"
	errPutVersioning     = "cannot set the bucket versioning"
	errFmtNotEmpty       = "bucket %q still holds objects, so it was not deleted and nothing was lost: empty it, or set spec.forProvider.forceDestroy: true to delete its objects with it"
	errEmpty             = "cannot empty the bucket"
	errDelete            = "cannot delete the bucket"
	errCannedACL         = "cannot expand spec.forProvider.cannedACL"
	msgNoPolicySupport   = "the S3 server does not implement bucket policies (501 NotImplemented): spec.forProvider.policy cannot be applied; remove it or use a server that supports policies"
	reasonSetACL         = event.Reason("SetACL")
	reasonSetPolicy      = event.Reason("SetPolicy")
	reasonSetVersioning  = event.Reason("SetVersioning")
	reasonAdopted        = event.Reason("AdoptedBucket")
	reasonConfigured     = event.Reason("ConfiguredBucket")
)

// Kind is the managed resource kind this package reconciles.
var Kind = managedcontroller.Kind{
	GroupVersionKind: v1alpha1.BucketGroupVersionKind,
	Object:           &v1alpha1.Bucket{},
	List:             &v1alpha1.BucketList{},
}

// Setup adds a controller that reconciles Buckets.
func Setup(mgr ctrl.Manager, o managedcontroller.Options) error {
	return managedcontroller.Setup(mgr, o, Kind,
		managedcontroller.WithExternalConnector[*v1alpha1.Bucket](&connector{
			kube:   mgr.GetClient(),
			record: managedcontroller.Recorder(mgr, Kind),
			newClient: func(c s3.Config) (s3.Buckets, error) {
				if o.WrapTransport != nil {
					return s3.New(c, s3.WithTransportWrapper(o.WrapTransport))
				}
				return s3.New(c)
			},
			noPolicy: &sync.Map{},
		}),
		// The external name is the bucket name, set by Create once the bucket is ours: an
		// unset name means "not created by this resource", which keeps a delete from
		// touching a bucket of the same name that belongs to someone else.
		managed.WithInitializers(),
		// The bucket name is deterministic: a retry after a lost create finds the bucket.
		managed.WithDeterministicExternalName(true),
		// Both Swift and versitygw answer for a bucket as soon as it is created.
		managed.WithCreationGracePeriod(0),
	)
}

// SetupGated sets the controller up once the Bucket CRD is established.
func SetupGated(mgr ctrl.Manager, o managedcontroller.Options) error {
	return managedcontroller.Gated(mgr, o, func() error { return Setup(mgr, o) }, Kind.GroupVersionKind)
}

type connector struct {
	kube      client.Reader
	record    event.Recorder
	newClient func(s3.Config) (s3.Buckets, error)
	// noPolicy remembers the endpoints that answered 501 to a policy call, so that buckets
	// there cost one call less per poll.
	noPolicy *sync.Map
}

func (c *connector) Connect(ctx context.Context, cr *v1alpha1.Bucket) (managed.TypedExternalClient[*v1alpha1.Bucket], error) {
	cfg, err := s3.ConfigFrom(ctx, c.kube, s3.BucketCredentials(cr))
	if err != nil {
		return nil, err
	}
	b, err := c.newClient(cfg)
	if err != nil {
		return nil, errors.Wrap(err, errNewClient)
	}
	return &external{s3: b, cfg: cfg, endpoint: cfg.Endpoint, region: cfg.Region, record: c.record, noPolicy: c.noPolicy}, nil
}

type external struct {
	s3               s3.Buckets
	cfg              s3.Config
	endpoint, region string
	record           event.Recorder
	noPolicy         *sync.Map

	observed *observed
	// unreadable is set by an Observe that could not read the bucket's ACL: a bucket of
	// this name may exist that these credentials may not read, and Create must not
	// configure it.
	unreadable bool
}

// observed is what Observe read, for Update to work from.
type observed struct {
	acl             *s3.ACL
	policy          string
	policySupported bool
	versioning      string
}

func bucketName(cr *v1alpha1.Bucket) string { return s3.BucketName(cr) }

func (e *external) Observe(ctx context.Context, cr *v1alpha1.Bucket) (managed.ExternalObservation, error) {
	ours := meta.GetExternalName(cr) != ""
	if meta.WasDeleted(cr) && !ours {
		// Never created by this resource (its name was taken, say): nothing to delete.
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	name := bucketName(cr)
	acl, err := e.s3.GetACL(ctx, name)
	if s3.IsNotFound(err) || (!ours && s3.IsAccessDenied(err)) {
		// A bucket we may not read and did not create is someone else's: Create says so.
		e.unreadable = s3.IsAccessDenied(err)
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errGetACL)
	}
	adopted := false
	if !ours {
		// The bucket exists in this account, but nothing says it is this resource's.
		switch {
		case createCutShort(cr):
			// This resource's create was interrupted after the bucket was made.
			e.record.Event(cr, event.Normal(reasonAdopted, fmt.Sprintf("Recorded bucket %s, which a create cut short had made", name)))
		case cr.Spec.ForProvider.AdoptExisting:
			e.record.Event(cr, event.Normal(reasonAdopted, fmt.Sprintf("Adopted the existing bucket %s with the objects it holds, as spec.forProvider.adoptExisting asks", name)))
		default:
			return managed.ExternalObservation{}, errors.Errorf(errFmtExistsUnowned, name)
		}
		meta.SetExternalName(cr, name)
		adopted = true
	}
	o := &observed{acl: acl, policySupported: true}
	if _, unsupported := e.noPolicy.Load(e.endpoint); unsupported {
		o.policySupported = false
	} else {
		o.policy, err = e.s3.GetPolicy(ctx, name)
		switch {
		case s3.IsNotImplemented(err):
			o.policySupported = false
			e.noPolicy.Store(e.endpoint, true)
		case err != nil:
			return managed.ExternalObservation{}, errors.Wrap(err, errGetPolicy)
		}
	}
	if o.versioning, err = e.s3.GetVersioning(ctx, name); err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errGetVersioning)
	}
	e.observed = o

	// An adopted bucket's name is written with the resource (a late-initialization update).
	lateInit := adopted
	if cr.Spec.ForProvider.BucketName == nil {
		cr.Spec.ForProvider.BucketName, lateInit = ptr.To(name), true
	}
	cr.Status.AtProvider = status(e.endpoint, e.region, o)
	if meta.WasDeleted(cr) {
		return managed.ExternalObservation{ResourceExists: true}, nil
	}

	aclOK, err := e.aclUpToDate(cr, acl)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	policyOK, err := policyUpToDate(cr, o)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	upToDate := aclOK && policyOK && versioningUpToDate(cr, o.versioning)
	switch {
	case cr.Spec.ForProvider.Policy != nil && !o.policySupported:
		cr.SetConditions(xpv2.Unavailable().WithMessage(msgNoPolicySupport))
	case upToDate:
		cr.SetConditions(xpv2.Available())
	}
	return managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        upToDate,
		ResourceLateInitialized: lateInit,
		ConnectionDetails:       e.connectionDetails(name),
	}, nil
}

// createCutShort tells whether a create of this resource started (the reconciler records that
// before it calls Create) and never recorded its end: the provider stopped in between.
func createCutShort(cr *v1alpha1.Bucket) bool {
	pending := meta.GetExternalCreatePending(cr)
	return !pending.IsZero() && pending.After(meta.GetExternalCreateSucceeded(cr)) && pending.After(meta.GetExternalCreateFailed(cr))
}

// connectionDetails are everything an app needs to use the bucket, under the names S3 SDKs
// read: the keys it is reached with (re-published when the Contract rotates them) and its name.
func (e *external) connectionDetails(name string) managed.ConnectionDetails {
	return managed.ConnectionDetails{
		v1alpha1.ConnectionAWSAccessKeyID: []byte(e.cfg.AccessKeyID),
		v1alpha1.ConnectionAWSSecretKey:   []byte(e.cfg.SecretAccessKey),
		v1alpha1.ConnectionS3Endpoint:     []byte(e.cfg.Endpoint),
		v1alpha1.ConnectionAWSRegion:      []byte(e.cfg.Region),
		v1alpha1.ConnectionBucketName:     []byte(name),
	}
}

func status(endpoint, region string, o *observed) v1alpha1.BucketObservation {
	s := v1alpha1.BucketObservation{
		Endpoint:         endpoint,
		Region:           region,
		OwnerID:          o.acl.Owner.ID,
		OwnerDisplayName: o.acl.Owner.DisplayName,
		PolicySupported:  ptr.To(o.policySupported),
		Versioning:       o.versioning,
	}
	for _, g := range s3.NormalizeGrants(o.acl.Grants) {
		s.Grants = append(s.Grants, v1alpha1.ObservedGrant{Permission: g.Permission, Type: g.Grantee.Type, Value: g.Grantee.Value, DisplayName: displayName(o.acl.Grants, g)})
	}
	if p, err := s3.NormalizePolicy(o.policy); err == nil {
		s.Policy = p
	}
	return s
}

func displayName(grants []s3.Grant, g s3.Grant) string {
	for _, x := range grants {
		if x.Grantee.Value == g.Grantee.Value && x.Grantee.DisplayName != "" {
			return x.Grantee.DisplayName
		}
	}
	return ""
}

// desiredGrants is the ACL the spec asks for, or nil when the spec leaves the ACL alone.
func desiredGrants(cr *v1alpha1.Bucket, owner s3.Owner) ([]s3.Grant, error) {
	p := cr.Spec.ForProvider
	if p.CannedACL != nil {
		g, err := s3.ExpandCannedACL(*p.CannedACL, owner)
		return g, errors.Wrap(err, errCannedACL)
	}
	var grants []s3.Grant
	for _, set := range []struct {
		permission string
		grantees   []v1alpha1.Grantee
	}{
		{"READ", p.GrantRead}, {"WRITE", p.GrantWrite}, {"READ_ACP", p.GrantReadACP},
		{"WRITE_ACP", p.GrantWriteACP}, {"FULL_CONTROL", p.GrantFullControl},
	} {
		for _, g := range set.grantees {
			grants = append(grants, s3.Grant{Permission: set.permission, Grantee: s3.Grantee{Type: g.Type, Value: g.Value}})
		}
	}
	if grants == nil {
		return nil, nil
	}
	return s3.WithOwner(grants, owner), nil
}

func (e *external) aclUpToDate(cr *v1alpha1.Bucket, acl *s3.ACL) (bool, error) {
	want, err := desiredGrants(cr, acl.Owner)
	if err != nil || want == nil {
		return true, err
	}
	return s3.GrantsEqual(want, acl.Grants), nil
}

// specPolicy is the spec's policy document as compact JSON ("" when unset).
func specPolicy(cr *v1alpha1.Bucket) string {
	if p := cr.Spec.ForProvider.Policy; p != nil {
		return string(p.Raw)
	}
	return ""
}

func policyUpToDate(cr *v1alpha1.Bucket, o *observed) (bool, error) {
	want := specPolicy(cr)
	if want == "" || !o.policySupported {
		// Unset: the policy is left alone. Unsupported: nothing can be done, and the
		// Ready condition says so instead of retrying forever.
		return true, nil
	}
	eq, err := s3.PoliciesEqual(want, o.policy)
	return eq, errors.Wrap(err, errPolicyJSON)
}

func versioningUpToDate(cr *v1alpha1.Bucket, have string) bool {
	want := ptr.Deref(cr.Spec.ForProvider.Versioning, "")
	// A bucket that never had versioning is as good as suspended.
	return want == "" || want == have || (want == "Suspended" && have == "")
}

// Create makes the bucket and, in the same reconcile, gives it the canned ACL, policy and
// versioning the spec asks for: a new bucket is not what was asked for until then, and with
// them the observation that follows has nothing left to do (one reconcile and three reads
// fewer than leaving them to Update). Grants need the owner's canonical ID, which only a read
// of the ACL tells: Update sets them.
func (e *external) Create(ctx context.Context, cr *v1alpha1.Bucket) (managed.ExternalCreation, error) {
	name := bucketName(cr)
	if err := e.s3.CreateBucket(ctx, name); err != nil {
		if s3.IsOwnedByAnother(err) {
			return managed.ExternalCreation{}, errors.Errorf(errFmtOwnedElsewhere, name)
		}
		return managed.ExternalCreation{}, errors.Wrap(err, errCreate)
	}
	meta.SetExternalName(cr, name)
	if e.unreadable {
		// The create "succeeded" on a bucket that existed and that these credentials may
		// not read (one of the same account, locked by its policy, say): it is recorded,
		// and the next Observe reports what it may not do; nothing is written to it.
		return managed.ExternalCreation{}, nil
	}
	return managed.ExternalCreation{}, e.configureNew(ctx, cr, name)
}

// configureNew sets what the spec asks of a bucket just made. A bucket that never had
// versioning is as good as suspended, and a new one has no policy to keep.
func (e *external) configureNew(ctx context.Context, cr *v1alpha1.Bucket, name string) error {
	p := cr.Spec.ForProvider
	var set []string
	defer func() {
		if len(set) > 0 {
			e.record.Event(cr, event.Normal(reasonConfigured, "Set the new bucket's "+strings.Join(set, ", ")+" as spec.forProvider asks"))
		}
	}()
	if p.CannedACL != nil {
		if err := e.s3.PutCannedACL(ctx, name, *p.CannedACL); err != nil {
			return errors.Wrap(err, errPutACL)
		}
		set = append(set, "canned ACL "+*p.CannedACL)
	}
	if _, unsupported := e.noPolicy.Load(e.endpoint); specPolicy(cr) != "" && !unsupported {
		err := e.s3.PutPolicy(ctx, name, compact(specPolicy(cr)))
		switch {
		case s3.IsNotImplemented(err):
			// Observe reads the policy and reports what cannot be done.
			e.noPolicy.Store(e.endpoint, true)
		case err != nil:
			return errors.Wrap(err, errPutPolicy)
		default:
			set = append(set, "policy")
		}
	}
	if v := ptr.Deref(p.Versioning, ""); v != "" && v != "Suspended" {
		if err := e.s3.PutVersioning(ctx, name, v); err != nil {
			return errors.Wrap(err, errPutVersioning)
		}
		set = append(set, "versioning "+v)
	}
	return nil
}

func (e *external) Update(ctx context.Context, cr *v1alpha1.Bucket) (managed.ExternalUpdate, error) {
	name := bucketName(cr)
	o := e.observed
	if o == nil {
		// Update always follows Observe in one reconcile; this is only a safety net.
		if _, err := e.Observe(ctx, cr); err != nil {
			return managed.ExternalUpdate{}, err
		}
		o = e.observed
	}
	if ok, err := e.aclUpToDate(cr, o.acl); err != nil {
		return managed.ExternalUpdate{}, err
	} else if !ok {
		var err error
		if canned := cr.Spec.ForProvider.CannedACL; canned != nil {
			err = e.s3.PutCannedACL(ctx, name, *canned)
		} else {
			want, _ := desiredGrants(cr, o.acl.Owner)
			err = e.s3.PutACL(ctx, name, s3.ACL{Owner: o.acl.Owner, Grants: want})
		}
		if err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errPutACL)
		}
		e.record.Event(cr, event.Normal(reasonSetACL, "Set the bucket ACL to the one in spec.forProvider (it differed)"))
	}
	if ok, err := policyUpToDate(cr, o); err != nil {
		return managed.ExternalUpdate{}, err
	} else if !ok {
		if err := e.s3.PutPolicy(ctx, name, compact(specPolicy(cr))); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errPutPolicy)
		}
		e.record.Event(cr, event.Normal(reasonSetPolicy, "Set the bucket policy to the one in spec.forProvider (it differed)"))
	}
	if !versioningUpToDate(cr, o.versioning) {
		v := ptr.Deref(cr.Spec.ForProvider.Versioning, "")
		if err := e.s3.PutVersioning(ctx, name, v); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errPutVersioning)
		}
		e.record.Event(cr, event.Normal(reasonSetVersioning, fmt.Sprintf("Set versioning to %s", v)))
	}
	return managed.ExternalUpdate{}, nil
}

func compact(doc string) string {
	var v any
	if json.Unmarshal([]byte(doc), &v) != nil {
		return doc
	}
	b, err := json.Marshal(v)
	if err != nil {
		return doc
	}
	return string(b)
}

// Delete never loses data unless asked: a bucket with objects stays, and the condition says
// why, unless spec.forProvider.forceDestroy is true.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.Bucket) (managed.ExternalDelete, error) {
	name := bucketName(cr)
	if cr.Spec.ForProvider.ForceDestroy {
		if err := e.s3.EmptyBucket(ctx, name); err != nil && !s3.IsNotFound(err) {
			return managed.ExternalDelete{}, errors.Wrap(err, errEmpty)
		}
	}
	err := e.s3.DeleteBucket(ctx, name)
	switch {
	case err == nil:
		return managed.ExternalDelete{}, nil
	case s3.IsNotEmpty(err):
		return managed.ExternalDelete{}, errors.Errorf(errFmtNotEmpty, name)
	default:
		return managed.ExternalDelete{}, errors.Wrap(err, errDelete)
	}
}

func (e *external) Disconnect(_ context.Context) error { return nil }
