// Package contract reconciles Contracts: S3 access keys made of Keystone EC2 credentials,
// published only in the connection Secret and rotated without a moment without valid keys.
package contract

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
)

const (
	errConnect          = "cannot connect to OpenStack"
	errEC2              = "cannot use Keystone's EC2 credentials API"
	errS3Endpoint       = "cannot tell where the S3 API is"
	errGetCredential    = "cannot get the EC2 credential"
	errCreateCredential = "cannot create an EC2 credential"
	errDeleteCredential = "cannot delete the EC2 credential"
	errRecordNewKey     = "cannot record the new access key ID; it exists in Keystone and will be adopted"
	reasonRotated       = event.Reason("RotatedKeys")
	reasonRetired       = event.Reason("RetiredPreviousKeys")

	defaultGracePeriod = time.Hour
)

// Kind is the managed resource kind this package reconciles.
var Kind = managedcontroller.Kind{
	GroupVersionKind: v1alpha1.ContractGroupVersionKind,
	Object:           &v1alpha1.Contract{},
	List:             &v1alpha1.ContractList{},
}

// Setup adds a controller that reconciles Contracts.
func Setup(mgr ctrl.Manager, o managedcontroller.Options) error {
	return managedcontroller.Setup(mgr, o, Kind,
		managed.WithTypedExternalConnector[*v1alpha1.Contract](&connector{
			openstack: o.OpenStack,
			record:    managedcontroller.Recorder(mgr, Kind),
			annotate:  managed.NewRetryingCriticalAnnotationUpdater(mgr.GetClient()),
		}),
		// The access key comes from Keystone in Create.
		managed.WithInitializers(),
		managed.WithCreationGracePeriod(0),
	)
}

// SetupGated sets the controller up once the Contract CRD is established.
func SetupGated(mgr ctrl.Manager, o managedcontroller.Options) error {
	return managedcontroller.Gated(mgr, o, func() error { return Setup(mgr, o) }, Kind.GroupVersionKind)
}

type connector struct {
	openstack openstack.SessionConnector
	record    event.Recorder
	annotate  managed.CriticalAnnotationUpdater
}

func (c *connector) Connect(ctx context.Context, cr *v1alpha1.Contract) (managed.TypedExternalClient[*v1alpha1.Contract], error) {
	s, err := c.openstack.Connect(ctx, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	creds, err := s.EC2Credentials()
	if err != nil {
		return nil, errors.Wrap(err, errEC2)
	}
	endpoint, region, err := s.S3Endpoint()
	if err != nil {
		return nil, errors.Wrap(err, errS3Endpoint)
	}
	return &external{creds: creds, endpoint: endpoint, region: region, record: c.record, annotate: c.annotate, now: time.Now}, nil
}

type external struct {
	creds            openstack.EC2Credentials
	endpoint, region string
	record           event.Recorder
	annotate         managed.CriticalAnnotationUpdater
	now              func() time.Time
}

// owner is the user and project the keys belong to: the spec's, else the session's own.
func (e *external) owner(cr *v1alpha1.Contract) (string, string, error) {
	user, project, err := e.creds.WhoAmI()
	if err != nil {
		return "", "", err
	}
	return ptr.Deref(cr.Spec.ForProvider.UserID, user), ptr.Deref(cr.Spec.ForProvider.ProjectID, project), nil
}

func (e *external) Observe(ctx context.Context, cr *v1alpha1.Contract) (managed.ExternalObservation, error) {
	access := meta.GetExternalName(cr)
	if access == "" {
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	user, _, err := e.owner(cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	cred, err := e.creds.GetEC2Credential(ctx, user, access)
	if openstack.IsNotFound(err) {
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errGetCredential)
	}

	now := e.now()
	st := readRotation(cr)
	lateInit := false
	if st.createdAt.IsZero() {
		// Keys the provider adopted (or made before it recorded their age): their life
		// starts now, and a rotation request already in the spec is not a request to
		// replace them.
		st.createdAt, st.lastRequest, lateInit = now, rotationRequest(cr), true
		writeRotation(cr, st)
	}
	a := &cr.Status.AtProvider
	a.AccessKeyID, a.UserID, a.ProjectID = cred.Access, cred.UserID, cred.ProjectID
	a.Endpoint, a.Region = e.endpoint, e.region
	st.mirror(cr)

	upToDate := !rotationDue(cr, st, now) && !previousExpired(st, now)
	cr.SetConditions(xpv2.Available())
	return managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        upToDate,
		ResourceLateInitialized: lateInit,
		ConnectionDetails:       e.connectionDetails(cred),
	}, nil
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.Contract) (managed.ExternalCreation, error) {
	user, project, err := e.owner(cr)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	cred, err := e.creds.CreateEC2Credential(ctx, user, project)
	if err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errCreateCredential)
	}
	meta.SetExternalName(cr, cred.Access)
	// Persisted with the external name by the reconciler's critical annotation update.
	writeRotation(cr, rotation{createdAt: e.now(), lastRequest: rotationRequest(cr)})
	return managed.ExternalCreation{ConnectionDetails: e.connectionDetails(cred)}, nil
}

// Update rotates the keys when due, and retires the previous keys once their grace period
// is over. New keys are published (in the same Secret update, access and secret key together)
// before the previous ones stop working, so readers never see a moment without valid keys.
//
// The rotation record lives in annotations, written in one update with the external name:
// the reconcile that update triggers may read a status that is not written yet, and must not
// take the keys for unrotated and rotate them again.
func (e *external) Update(ctx context.Context, cr *v1alpha1.Contract) (managed.ExternalUpdate, error) {
	user, project, err := e.owner(cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	now := e.now()
	st := readRotation(cr)

	if previousExpired(st, now) {
		if err := e.creds.DeleteEC2Credential(ctx, user, st.previous); err != nil && !openstack.IsNotFound(err) {
			return managed.ExternalUpdate{}, errors.Wrap(err, errDeleteCredential)
		}
		e.record.Event(cr, event.Normal(reasonRetired, fmt.Sprintf("Deleted the previous access key %s: its grace period is over", st.previous)))
		st.previous, st.previousExpireAt = "", time.Time{}
		if err := e.persist(ctx, cr, st); err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	if !rotationDue(cr, st, now) {
		return managed.ExternalUpdate{}, nil
	}
	if st.previous != "" {
		// Rotated again within a grace period: the keys published before the current
		// ones are two generations old by now.
		if err := e.creds.DeleteEC2Credential(ctx, user, st.previous); err != nil && !openstack.IsNotFound(err) {
			return managed.ExternalUpdate{}, errors.Wrap(err, errDeleteCredential)
		}
	}

	cred, err := e.creds.CreateEC2Credential(ctx, user, project)
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errCreateCredential)
	}
	previous := meta.GetExternalName(cr)
	grace := defaultGracePeriod
	if r := cr.Spec.ForProvider.Rotation; r != nil && r.GracePeriod != nil {
		grace = r.GracePeriod.Duration
	}
	meta.SetExternalName(cr, cred.Access)
	st = rotation{createdAt: now, lastRequest: rotationRequest(cr), previous: previous, previousExpireAt: now.Add(grace)}
	if err := e.persist(ctx, cr, st); err != nil {
		_ = e.creds.DeleteEC2Credential(ctx, user, cred.Access)
		return managed.ExternalUpdate{}, err
	}
	cr.Status.AtProvider.AccessKeyID = cred.Access
	e.record.Event(cr, event.Normal(reasonRotated, fmt.Sprintf("Published new access key %s; the previous key %s stays valid until %s", cred.Access, previous, st.previousExpireAt.UTC().Format(time.RFC3339))))
	return managed.ExternalUpdate{ConnectionDetails: e.connectionDetails(cred)}, nil
}

// persist writes the rotation record (and the external name) at once; Update's other
// changes to metadata are not persisted. The updater may re-read the object, so the status
// is mirrored after it.
func (e *external) persist(ctx context.Context, cr *v1alpha1.Contract, st rotation) error {
	writeRotation(cr, st)
	if err := e.annotate.UpdateCriticalAnnotations(ctx, cr); err != nil {
		return errors.Wrap(err, errRecordNewKey)
	}
	st.mirror(cr)
	return nil
}

func (e *external) Delete(ctx context.Context, cr *v1alpha1.Contract) (managed.ExternalDelete, error) {
	user, _, err := e.owner(cr)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	for _, access := range []string{readRotation(cr).previous, meta.GetExternalName(cr)} {
		if access == "" {
			continue
		}
		if err := e.creds.DeleteEC2Credential(ctx, user, access); err != nil && !openstack.IsNotFound(err) {
			return managed.ExternalDelete{}, errors.Wrap(err, errDeleteCredential)
		}
	}
	return managed.ExternalDelete{}, nil
}

func (e *external) Disconnect(_ context.Context) error { return nil }

func (e *external) connectionDetails(c *openstack.EC2Credential) managed.ConnectionDetails {
	return managed.ConnectionDetails{
		v1alpha1.ConnectionAccessKeyID:     []byte(c.Access),
		v1alpha1.ConnectionSecretAccessKey: []byte(c.Secret),
		v1alpha1.ConnectionEndpoint:        []byte(e.endpoint),
		v1alpha1.ConnectionRegion:          []byte(e.region),
		v1alpha1.ConnectionAWSAccessKeyID:  []byte(c.Access),
		v1alpha1.ConnectionAWSSecretKey:    []byte(c.Secret),
		v1alpha1.ConnectionS3Endpoint:      []byte(e.endpoint),
		v1alpha1.ConnectionAWSRegion:       []byte(e.region),
	}
}

// rotation is a Contract's rotation record, kept in annotations.
type rotation struct {
	createdAt        time.Time
	lastRequest      string
	previous         string
	previousExpireAt time.Time
}

// Annotations holding the rotation record.
const (
	annotationKeysCreatedAt   = "objectstorage.stackservices.io/keys-created-at"
	annotationLastRequest     = "objectstorage.stackservices.io/last-rotation-request"
	annotationPrevious        = "objectstorage.stackservices.io/previous-access-key"
	annotationPreviousExpires = "objectstorage.stackservices.io/previous-keys-expire-at"
)

func readRotation(cr *v1alpha1.Contract) rotation {
	a := cr.GetAnnotations()
	parse := func(k string) time.Time {
		t, _ := time.Parse(time.RFC3339, a[k])
		return t
	}
	return rotation{
		createdAt:        parse(annotationKeysCreatedAt),
		lastRequest:      a[annotationLastRequest],
		previous:         a[annotationPrevious],
		previousExpireAt: parse(annotationPreviousExpires),
	}
}

func writeRotation(cr *v1alpha1.Contract, st rotation) {
	format := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	set := map[string]string{
		annotationKeysCreatedAt:   format(st.createdAt),
		annotationLastRequest:     st.lastRequest,
		annotationPrevious:        st.previous,
		annotationPreviousExpires: format(st.previousExpireAt),
	}
	for k, v := range set {
		if v == "" {
			meta.RemoveAnnotations(cr, k)
			continue
		}
		meta.AddAnnotations(cr, map[string]string{k: v})
	}
}

// mirror shows the rotation record in the status.
func (st rotation) mirror(cr *v1alpha1.Contract) {
	a := &cr.Status.AtProvider
	a.KeysCreatedAt, a.PreviousKeysExpireAt, a.NextRotationAt = timeOrNil(st.createdAt), timeOrNil(st.previousExpireAt), nil
	a.PreviousAccessKeyID, a.LastRotationRequest = st.previous, st.lastRequest
	if next := nextRotation(cr, st); !next.IsZero() {
		a.NextRotationAt = &metav1.Time{Time: next}
	}
}

func timeOrNil(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &metav1.Time{Time: t}
}

func rotationRequest(cr *v1alpha1.Contract) string {
	if r := cr.Spec.ForProvider.Rotation; r != nil {
		return ptr.Deref(r.Request, "")
	}
	return ""
}

func nextRotation(cr *v1alpha1.Contract, st rotation) time.Time {
	r := cr.Spec.ForProvider.Rotation
	if r == nil || r.Period == nil || st.createdAt.IsZero() {
		return time.Time{}
	}
	return st.createdAt.Add(r.Period.Duration)
}

// rotationDue tells whether the keys must be replaced: their period is over, or a new
// rotation request came in.
func rotationDue(cr *v1alpha1.Contract, st rotation, now time.Time) bool {
	if req := rotationRequest(cr); req != "" && req != st.lastRequest {
		return true
	}
	next := nextRotation(cr, st)
	return !next.IsZero() && !now.Before(next)
}

func previousExpired(st rotation, now time.Time) bool {
	return st.previous != "" && !now.Before(st.previousExpireAt)
}
