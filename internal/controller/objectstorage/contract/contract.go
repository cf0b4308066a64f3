// Package contract reconciles Contracts: S3 access keys made of Keystone EC2 credentials,
// published only in the connection Secret and rotated without a moment without valid keys.
package contract

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/common"
	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
	"github.com/stackservices/provider-stackservices/internal/controller/tenancy"
)

const (
	errConnect          = "cannot connect to OpenStack"
	errEC2              = "cannot use Keystone's EC2 credentials API"
	errS3Endpoint       = "cannot tell where the S3 API is"
	errGetCredential    = "cannot get the EC2 credential"
	errCreateCredential = "cannot create an EC2 credential"
	errDeleteCredential = "cannot delete the EC2 credential"
	errNewKeys          = "cannot generate new keys"
	errRecordPending    = "cannot record the access key about to be created; nothing was created"
	errRecordNewKey     = "cannot record the new access key; it is recorded as pending and the next reconcile finishes the rotation"
	errFmtNotOurs       = "the access key %s was not made by this Contract, so the provider neither publishes nor deletes it (a Contract owns only keys it made): remove the crossplane.io/external-name annotation to get new keys"
	reasonRotated       = event.Reason("RotatedKeys")
	reasonRetired       = event.Reason("RetiredPreviousKeys")
	reasonRecovered     = event.Reason("RecoveredKeys")

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
		managedcontroller.WithExternalConnector[*v1alpha1.Contract](&connector{
			openstack: o.OpenStack,
			tenancy:   tenancy.NewChecker(mgr.GetClient()),
			record:    managedcontroller.Recorder(mgr, Kind),
			annotate:  managed.NewRetryingCriticalAnnotationUpdater(mgr.GetClient()),
			kube:      mgr.GetClient(),
		}),
		// The access key is chosen and recorded before the credential is created.
		managed.WithInitializers(),
		// The access key is recorded (as pending) before Keystone hears of it, so a create
		// interrupted by a crash is found again: nothing for the reconciler to refuse to retry.
		managed.WithDeterministicExternalName(true),
		managed.WithCreationGracePeriod(0),
	)
}

// SetupGated sets the controller up once the Contract CRD is established.
func SetupGated(mgr ctrl.Manager, o managedcontroller.Options) error {
	return managedcontroller.Gated(mgr, o, func() error { return Setup(mgr, o) }, Kind.GroupVersionKind)
}

type connector struct {
	openstack openstack.SessionConnector
	tenancy   *tenancy.Checker
	record    event.Recorder
	annotate  managed.CriticalAnnotationUpdater
	kube      client.Reader
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
	mayCreate := func(ctx context.Context) error {
		p := cr.Spec.ForProvider
		if p.UserID == nil && p.ProjectID == nil {
			return nil
		}
		return c.tenancy.Check(ctx, cr, tenancy.ContractOwners)
	}
	return &external{creds: creds, endpoint: endpoint, region: region, record: c.record, annotate: c.annotate, mayCreate: mayCreate, newKeys: openstack.NewEC2Keys, now: time.Now,
		users: func(ctx context.Context) ([]string, error) { return users(ctx, c.kube, cr) }}, nil
}

type external struct {
	creds            openstack.EC2Credentials
	endpoint, region string
	record           event.Recorder
	annotate         managed.CriticalAnnotationUpdater
	// mayCreate refuses new keys for another user or project unless the platform allowed
	// the namespace that. Reading and deleting keys the provider made is always allowed, so
	// a Contract refused from the start can still be deleted.
	mayCreate func(context.Context) error
	newKeys   func() (access, secret string, err error)
	now       func() time.Time
	// users lists what takes its keys from the Contract: its keys outlive them.
	users func(context.Context) ([]string, error)
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
	// One Contract's bad value (stored before its CRD validated it) stops that Contract only,
	// before anything is made, with a message saying which field.
	sched, err := scheduleOf(cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	user, _, err := e.owner(cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	access := meta.GetExternalName(cr)
	recovered := false
	if access == "" {
		// A create that was cut short after it recorded its key: the key may exist.
		pending := readRotation(cr).pending
		if pending == "" {
			return managed.ExternalObservation{ResourceExists: false}, nil
		}
		access, recovered = pending, true
	}
	cred, err := e.creds.GetEC2Credential(ctx, user, access)
	if openstack.IsNotFound(err) || (recovered && err == nil && !e.owns(cr, cred)) {
		// A pending key that is someone else's was never this Contract's to recover.
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errGetCredential)
	}
	if !e.owns(cr, cred) {
		return managed.ExternalObservation{}, errors.Errorf(errFmtNotOurs, access)
	}

	now := e.now()
	st := readRotation(cr)
	lateInit := false
	if recovered {
		meta.SetExternalName(cr, access)
		st.pending = ""
		e.record.Event(cr, event.Normal(reasonRecovered, fmt.Sprintf("Recorded access key %s, which a create cut short had made", access)))
		lateInit = true
	}
	if st.createdAt.IsZero() {
		// Keys the provider adopted (or made before it recorded their age): their life
		// starts now, and a rotation request already in the spec is not a request to
		// replace them.
		st.createdAt, st.lastRequest, lateInit = now, rotationRequest(cr), true
	}
	if lateInit {
		writeRotation(cr, st)
	}
	a := &cr.Status.AtProvider
	a.AccessKeyID, a.UserID, a.ProjectID = cred.Access, cred.UserID, cred.ProjectID
	a.Endpoint, a.Region = e.endpoint, e.region

	st.mirror(cr, sched)
	upToDate := !sched.due(cr, st, now) && !previousExpired(st, now) && (st.pending == "" || st.pending == access)
	cr.SetConditions(xpv2.Available())
	return managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        upToDate,
		ResourceLateInitialized: lateInit,
		ConnectionDetails:       e.connectionDetails(cred),
	}, nil
}

// newCredential makes keys for the Contract's owner, recording the access key (as pending)
// before Keystone hears of it: whatever fails after that, the key is never lost track of.
func (e *external) newCredential(ctx context.Context, cr *v1alpha1.Contract, st rotation) (*openstack.EC2Credential, rotation, error) {
	if err := e.mayCreate(ctx); err != nil {
		return nil, st, err
	}
	user, project, err := e.owner(cr)
	if err != nil {
		return nil, st, err
	}
	access, secret, err := e.newKeys()
	if err != nil {
		return nil, st, errors.Wrap(err, errNewKeys)
	}
	st.pending = access
	writeRotation(cr, st)
	if err := e.annotate.UpdateCriticalAnnotations(ctx, cr); err != nil {
		return nil, st, errors.Wrap(err, errRecordPending)
	}
	cred := &openstack.EC2Credential{Access: access, Secret: secret, UserID: user, ProjectID: project, Owner: string(cr.GetUID())}
	if err := e.creds.CreateEC2Credential(ctx, *cred); err != nil {
		// Recorded as pending: Observe or Update finds out whether it exists.
		return nil, st, errors.Wrap(err, errCreateCredential)
	}
	return cred, st, nil
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.Contract) (managed.ExternalCreation, error) {
	cred, st, err := e.newCredential(ctx, cr, readRotation(cr))
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	meta.SetExternalName(cr, cred.Access)
	// Persisted with the external name by the reconciler's critical annotation update; until
	// then the pending key names the credential.
	st.pending, st.createdAt, st.lastRequest = "", e.now(), rotationRequest(cr)
	writeRotation(cr, st)
	return managed.ExternalCreation{ConnectionDetails: e.connectionDetails(cred)}, nil
}

// Update rotates the keys when due, and retires the previous keys once their grace period
// is over. New keys are published (in the same Secret update, access and secret key together)
// before the previous ones stop working, so readers never see a moment without valid keys.
//
// The rotation record lives in annotations, written in one update with the external name:
// the reconcile that update triggers may read a status that is not written yet, and must not
// take the keys for unrotated and rotate them again. A rotation records its new access key as
// pending before it creates it; one cut short is finished by the next Update.
func (e *external) Update(ctx context.Context, cr *v1alpha1.Contract) (managed.ExternalUpdate, error) {
	user, _, err := e.owner(cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	sched, err := scheduleOf(cr)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	now := e.now()
	st := readRotation(cr)

	if st.pending != "" && st.pending != meta.GetExternalName(cr) {
		cred, err := e.creds.GetEC2Credential(ctx, user, st.pending)
		switch {
		case err == nil && e.owns(cr, cred):
			// A rotation made these keys and stopped before it published them.
			return e.publish(ctx, cr, cred, sched, now)
		case err != nil && !openstack.IsNotFound(err):
			return managed.ExternalUpdate{}, errors.Wrap(err, errGetCredential)
		}
		st.pending = ""
		if err := e.persist(ctx, cr, st, sched, errRecordNewKey); err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	if previousExpired(st, now) {
		if err := e.deleteOwn(ctx, cr, user, st.previous); err != nil {
			return managed.ExternalUpdate{}, err
		}
		e.record.Event(cr, event.Normal(reasonRetired, fmt.Sprintf("Deleted the previous access key %s: its grace period is over", st.previous)))
		st.previous, st.previousExpireAt = "", time.Time{}
		if err := e.persist(ctx, cr, st, sched, errRecordNewKey); err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	if !sched.due(cr, st, now) {
		return managed.ExternalUpdate{}, nil
	}
	if st.previous != "" {
		// Rotated again within a grace period: the keys published before the current
		// ones are two generations old by now.
		if err := e.deleteOwn(ctx, cr, user, st.previous); err != nil {
			return managed.ExternalUpdate{}, err
		}
		st.previous, st.previousExpireAt = "", time.Time{}
	}
	cred, _, err := e.newCredential(ctx, cr, st)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	return e.publish(ctx, cr, cred, sched, now)
}

// publish makes cred the current keys and the current ones the previous, valid for the grace
// period, and returns them for the connection Secret.
func (e *external) publish(ctx context.Context, cr *v1alpha1.Contract, cred *openstack.EC2Credential, sched schedule, now time.Time) (managed.ExternalUpdate, error) {
	previous := meta.GetExternalName(cr)
	meta.SetExternalName(cr, cred.Access)
	st := rotation{createdAt: now, lastRequest: rotationRequest(cr), previous: previous, previousExpireAt: now.Add(sched.grace)}
	if err := e.persist(ctx, cr, st, sched, errRecordNewKey); err != nil {
		return managed.ExternalUpdate{}, err
	}
	cr.Status.AtProvider.AccessKeyID = cred.Access
	e.record.Event(cr, event.Normal(reasonRotated, fmt.Sprintf("Published new access key %s; the previous key %s stays valid until %s", cred.Access, previous, st.previousExpireAt.UTC().Format(time.RFC3339))))
	return managed.ExternalUpdate{ConnectionDetails: e.connectionDetails(cred)}, nil
}

// persist writes the rotation record (and the external name) at once; Update's other
// changes to metadata are not persisted. The updater may re-read the object, so the status
// is mirrored after it.
func (e *external) persist(ctx context.Context, cr *v1alpha1.Contract, st rotation, sched schedule, msg string) error {
	writeRotation(cr, st)
	if err := e.annotate.UpdateCriticalAnnotations(ctx, cr); err != nil {
		return errors.Wrap(err, msg)
	}
	st.mirror(cr, sched)
	return nil
}

// Delete revokes every key the Contract has: the current, the previous, and one a create or a
// rotation recorded but may not have finished.
func (e *external) Delete(ctx context.Context, cr *v1alpha1.Contract) (managed.ExternalDelete, error) {
	using, err := e.users(ctx)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	if len(using) > 0 {
		return managed.ExternalDelete{}, errors.Errorf(errFmtInUse, strings.Join(using, ", "))
	}
	user, _, err := e.owner(cr)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	st := readRotation(cr)
	for _, access := range []string{st.previous, st.pending, meta.GetExternalName(cr)} {
		if err := e.deleteOwn(ctx, cr, user, access); err != nil {
			return managed.ExternalDelete{}, err
		}
	}
	return managed.ExternalDelete{}, nil
}

// owns tells whether the Contract made the credential: its blob names the Contract's UID.
// The annotations that name keys are the tenant's to write; this is what makes naming another
// namespace's key (or another user's) worthless.
func (e *external) owns(cr *v1alpha1.Contract, c *openstack.EC2Credential) bool {
	return c.Owner == string(cr.GetUID())
}

// deleteOwn deletes the credential if it exists and the Contract made it; a key of someone
// else's is left alone.
func (e *external) deleteOwn(ctx context.Context, cr *v1alpha1.Contract, user, access string) error {
	if access == "" {
		return nil
	}
	cred, err := e.creds.GetEC2Credential(ctx, user, access)
	switch {
	case openstack.IsNotFound(err):
		return nil
	case err != nil:
		return errors.Wrap(err, errGetCredential)
	case !e.owns(cr, cred):
		return nil
	}
	if err := e.creds.DeleteEC2Credential(ctx, user, access); err != nil && !openstack.IsNotFound(err) {
		return errors.Wrap(err, errDeleteCredential)
	}
	return nil
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
	// pending is an access key chosen and recorded before its credential was created: the
	// record that keeps a key from ever existing untracked.
	pending string
}

// Annotations holding the rotation record.
const (
	annotationKeysCreatedAt   = "objectstorage.stackservices.io/keys-created-at"
	annotationLastRequest     = "objectstorage.stackservices.io/last-rotation-request"
	annotationPrevious        = "objectstorage.stackservices.io/previous-access-key"
	annotationPreviousExpires = "objectstorage.stackservices.io/previous-keys-expire-at"
	annotationPending         = "objectstorage.stackservices.io/pending-access-key"
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
		pending:          a[annotationPending],
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
		annotationPending:         st.pending,
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
func (st rotation) mirror(cr *v1alpha1.Contract, sched schedule) {
	a := &cr.Status.AtProvider
	a.KeysCreatedAt, a.PreviousKeysExpireAt, a.NextRotationAt = timeOrNil(st.createdAt), timeOrNil(st.previousExpireAt), nil
	a.PreviousAccessKeyID, a.LastRotationRequest = st.previous, st.lastRequest
	if next := sched.next(st); !next.IsZero() {
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

// schedule is the spec's rotation period (0: on request only) and grace period, parsed.
type schedule struct {
	period, grace time.Duration
}

func scheduleOf(cr *v1alpha1.Contract) (schedule, error) {
	s := schedule{grace: defaultGracePeriod}
	r := cr.Spec.ForProvider.Rotation
	if r == nil {
		return s, nil
	}
	var err error
	if s.period, err = common.DurationOr(r.Period, "spec.forProvider.rotation.period", 0); err != nil {
		return s, err
	}
	if s.grace, err = common.DurationOr(r.GracePeriod, "spec.forProvider.rotation.gracePeriod", defaultGracePeriod); err != nil {
		return s, err
	}
	return s, nil
}

func (s schedule) next(st rotation) time.Time {
	if s.period <= 0 || st.createdAt.IsZero() {
		return time.Time{}
	}
	return st.createdAt.Add(s.period)
}

// due tells whether the keys must be replaced: their period is over, or a new rotation
// request came in.
func (s schedule) due(cr *v1alpha1.Contract, st rotation, now time.Time) bool {
	if req := rotationRequest(cr); req != "" && req != st.lastRequest {
		return true
	}
	next := s.next(st)
	return !next.IsZero() && !now.Before(next)
}

func previousExpired(st rotation, now time.Time) bool {
	return st.previous != "" && !now.Before(st.previousExpireAt)
}
