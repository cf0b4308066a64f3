// Package securitygroup reconciles SecurityGroup managed resources with Neutron security
// groups and their rules.
package securitygroup

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
)

const (
	errConnect            = "cannot connect to OpenStack"
	errGetSecurityGroup   = "cannot get the security group"
	errFindByTag          = "cannot look for a security group created for this resource"
	errFmtSeveralTagged   = "%d security groups carry the tag %q (IDs %s): set the crossplane.io/external-name annotation to the one to keep and delete the others"
	errCreateSecurityGrp  = "cannot create the security group"
	errTagSecurityGroup   = "cannot tag the security group"
	errUpdateSecurityGrp  = "cannot update the security group"
	errUpdateConflict     = "the security group changed in Neutron while it was being updated; retrying"
	errCreateRules        = "cannot create security group rules"
	errDeleteRule         = "cannot delete security group rule"
	errDeleteSecurityGrp  = "cannot delete the security group"
	errListPortsInUse     = "cannot list the ports that use the security group"
	errFmtInUse           = "cannot delete the security group: Neutron says it is in use by %d port(s): %s. Detach it from them first (delete the SecurityGroupAttachments that use it)"
	reasonRuleCreated     = event.Reason("CreatedRule")
	reasonRuleDeleted     = event.Reason("DeletedRule")
	reasonAdopted         = event.Reason("AdoptedSecurityGroup")
	identityTagPrefix     = v1alpha1.IdentityTagPrefix
	maxPortsInUseMessages = 10
	maxRulesInMessages    = 10
	errFmtOthersGroup     = "security group %s belongs to another managed resource (tag %s), so this one neither changes nor deletes it: a SecurityGroup manages the group it created, or an untagged group it imports; remove the crossplane.io/external-name annotation"
)

// otherIdentity is the identity tag of another managed resource the group carries, or "".
func otherIdentity(cr *v1alpha1.SecurityGroup, tags []string) string {
	for _, t := range tags {
		if strings.HasPrefix(t, identityTagPrefix) && t != identityTag(cr) {
			return t
		}
	}
	return ""
}

// Kind is the managed resource kind this package reconciles.
var Kind = managedcontroller.Kind{
	GroupVersionKind: v1alpha1.SecurityGroupGroupVersionKind,
	Object:           &v1alpha1.SecurityGroup{},
	List:             &v1alpha1.SecurityGroupList{},
}

// Setup adds a controller that reconciles SecurityGroups.
func Setup(mgr ctrl.Manager, o managedcontroller.Options) error {
	// Drift the session's listing finds reconciles its group at once, not at its next poll.
	drift := managedcontroller.NewDrift()
	return managedcontroller.SetupWithWatches(mgr, o, Kind, []managedcontroller.Watch{drift.Watch()},
		managedcontroller.WithExternalConnector[*v1alpha1.SecurityGroup](&connector{
			openstack: o.OpenStack,
			record:    managedcontroller.Recorder(mgr, Kind),
			// Half a poll: each poll of a group sees Neutron as it was at most half a poll
			// earlier, for two lists of the project's groups per poll whatever their number;
			// drift a list shows is reconciled then, so it is seen within a poll.
			listingAge: o.PollInterval / 2,
			drift:      drift,
		}),
		// The UUID comes from Neutron in Create; the tag that carries the resource's UID lets
		// Observe adopt a group whose UUID was lost in a crash, so a retry is safe.
		managed.WithInitializers(),
		managed.WithDeterministicExternalName(true),
		// Neutron reads its own writes: a group it does not find is gone, also right after
		// it was created. Waiting out a grace period would only stall the delete of new groups.
		managed.WithCreationGracePeriod(0),
	)
}

// SetupGated sets the controller up once the SecurityGroup CRD is established.
func SetupGated(mgr ctrl.Manager, o managedcontroller.Options) error {
	return managedcontroller.Gated(mgr, o, func() error { return Setup(mgr, o) }, Kind.GroupVersionKind)
}

// connector connects SecurityGroups to Neutron.
type connector struct {
	openstack openstack.SessionConnector
	record    event.Recorder
	// listingAge is how old the session's listing of groups may be when a group is observed
	// from it; zero, every observation GETs its group.
	listingAge time.Duration
	// drift reconciles the resources whose groups the listing saw change.
	drift *managedcontroller.Drift
}

func (c *connector) Connect(ctx context.Context, cr *v1alpha1.SecurityGroup) (managed.TypedExternalClient[*v1alpha1.SecurityGroup], error) {
	s, err := c.openstack.Connect(ctx, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	e := &external{groups: s.SecurityGroups(), ports: s.Ports(), record: c.record}
	if c.listingAge > 0 {
		e.listing = s.GroupListing(c.listingAge)
		e.watcher, e.drifted = c.drift.For(cr)
	}
	return e, nil
}

// groupListing serves observations from one list of the project's groups.
type groupListing interface {
	Observe(ctx context.Context, id string) (*openstack.SecurityGroup, error)
	Wrote(id string, now *openstack.SecurityGroup)
	Watch(watcher string, ids []string, notify func())
	Forget(watcher string)
}

// portsInUse is all this controller needs of the port API: who uses a group it cannot delete.
type portsInUse interface {
	ListPortsWithSecurityGroup(ctx context.Context, securityGroupID string) ([]openstack.Port, error)
}

// external reconciles one SecurityGroup with Neutron.
type external struct {
	groups openstack.SecurityGroups
	ports  portsInUse
	record event.Recorder
	// listing, when set, serves Observe; Create, Update and Delete tell it what they wrote.
	listing groupListing
	// watcher names this resource to the listing, and drifted reconciles it when a list
	// shows its group changed.
	watcher string
	drifted func()
}

// watch asks the listing to tell of changes of the group, or to stop telling once the
// resource is deleted or its group gone.
func (e *external) watch(cr *v1alpha1.SecurityGroup, id string) {
	if e.listing == nil || e.drifted == nil {
		return
	}
	if id == "" || meta.WasDeleted(cr) {
		e.listing.Forget(e.watcher)
		return
	}
	e.listing.Watch(e.watcher, []string{id}, e.drifted)
}

// observe reads the group for Observe: from the listing when there is one.
func (e *external) observe(ctx context.Context, id string) (*openstack.SecurityGroup, error) {
	if e.listing != nil {
		return e.listing.Observe(ctx, id)
	}
	return e.groups.GetSecurityGroup(ctx, id)
}

// wrote tells the listing that the group was just written, and what it now is when the
// write's answers told the whole of it (now nil: they did not, or a call failed).
func (e *external) wrote(id string, now *openstack.SecurityGroup) {
	if e.listing != nil && id != "" {
		e.listing.Wrote(id, now)
	}
}

func identityTag(cr *v1alpha1.SecurityGroup) string { return identityTagPrefix + string(cr.GetUID()) }

func (e *external) Observe(ctx context.Context, cr *v1alpha1.SecurityGroup) (managed.ExternalObservation, error) {
	var (
		sg      *openstack.SecurityGroup
		adopted bool
	)
	id := meta.GetExternalName(cr)
	if id == "" && meta.GetExternalCreatePending(cr).IsZero() && cr.Status.AtProvider.ID == "" {
		// crossplane-runtime records that a create is pending before it calls Create, and
		// no group was ever observed for it: no group of this resource can exist to look for.
		// (A resource replaced without its annotations still has its status, and is looked
		// up by its tag.)
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	if id == "" {
		found, err := e.findCreatedFor(ctx, cr)
		if err != nil || found == nil {
			return managed.ExternalObservation{}, err
		}
		meta.SetExternalName(cr, found.ID)
		e.record.Event(cr, event.Normal(reasonAdopted, fmt.Sprintf("Adopted security group %s, which an earlier attempt created for this resource", found.ID)))
		sg, adopted = found, true
	} else {
		got, err := e.observe(ctx, id)
		if openstack.IsNotFound(err) {
			e.watch(cr, "")
			return managed.ExternalObservation{ResourceExists: false}, nil
		}
		if err != nil {
			return managed.ExternalObservation{}, errors.Wrap(err, errGetSecurityGroup)
		}
		sg = got
	}

	if other := otherIdentity(cr, sg.Tags); other != "" {
		// The external name is the tenant's to write: naming another resource's group must
		// not let this one change it, delete it or show its rules.
		e.watch(cr, "")
		if meta.WasDeleted(cr) {
			return managed.ExternalObservation{ResourceExists: false}, nil
		}
		return managed.ExternalObservation{}, errors.Errorf(errFmtOthersGroup, sg.ID, other)
	}
	e.watch(cr, sg.ID)
	cr.Status.AtProvider = observation(sg)
	// Fields left unset are filled in from Neutron so that an imported group is not renamed.
	// A group this resource created already has them (its defaults): filling them in would
	// only be a spec update racing the create's own writes, and a group adopted from a create
	// cut short may still carry the description its create marked it with.
	lateInit := false
	if meta.GetExternalCreateSucceeded(cr).IsZero() && !adopted {
		lateInit = lateInitialize(&cr.Spec.ForProvider, sg)
	}
	if meta.WasDeleted(cr) {
		return managed.ExternalObservation{ResourceExists: true}, nil
	}

	desired, unresolved := desiredRules(cr, sg.ID)
	upToDate := settingsUpToDate(cr, sg) &&
		tagsUpToDate(desiredTags(cr), sg.Tags) &&
		diffRules(desired, sg.Rules).empty()
	switch {
	case len(unresolved) > 0:
		cr.SetConditions(xpv2.Unavailable().WithMessage(unresolvedMessage(cr, unresolved)))
	case upToDate || !mayUpdate(cr.GetManagementPolicies()):
		// An observed-only group is usable as it is: there is nothing to bring up to date.
		cr.SetConditions(xpv2.Available())
	}
	return managed.ExternalObservation{
		ResourceExists:          true,
		ResourceUpToDate:        upToDate,
		ResourceLateInitialized: lateInit || adopted,
	}, nil
}

// findCreatedFor looks for a group an earlier Create made for this resource but could not
// record, by the identity tag (never by name: names are not unique in Neutron).
func (e *external) findCreatedFor(ctx context.Context, cr *v1alpha1.SecurityGroup) (*openstack.SecurityGroup, error) {
	tag := identityTag(cr)
	found, err := e.groups.ListSecurityGroupsByTag(ctx, tag)
	if err != nil {
		return nil, errors.Wrap(err, errFindByTag)
	}
	switch len(found) {
	case 0:
		return nil, nil //nolint:nilnil // Not found is an answer, not an error.
	case 1:
		return &found[0], nil
	default:
		ids := make([]string, 0, len(found))
		for _, sg := range found {
			ids = append(ids, sg.ID)
		}
		return nil, errors.Errorf(errFmtSeveralTagged, len(found), tag, strings.Join(ids, ", "))
	}
}

func (e *external) Create(ctx context.Context, cr *v1alpha1.SecurityGroup) (managed.ExternalCreation, error) {
	sg, err := e.groups.CreateSecurityGroup(ctx, desiredSettings(cr), desiredTags(cr), identityTag(cr))
	if sg == nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errCreateSecurityGrp)
	}
	// Recorded even when tagging failed: the reconciler persists it with the error.
	meta.SetExternalName(cr, sg.ID)
	if err != nil {
		e.wrote(sg.ID, nil)
		return managed.ExternalCreation{}, errors.Wrap(err, errCreateSecurityGrp)
	}
	// Rules in the same reconcile: a new group is not usable until its rules exist.
	rules, err := e.syncRules(ctx, cr, sg)
	if err != nil {
		e.wrote(sg.ID, nil)
		return managed.ExternalCreation{}, err
	}
	// Neutron answered every call with what it made: the observation after the create
	// needs no GET of its own.
	sg.Rules = rules
	e.wrote(sg.ID, sg)
	return managed.ExternalCreation{}, nil
}

func (e *external) Update(ctx context.Context, cr *v1alpha1.SecurityGroup) (managed.ExternalUpdate, error) {
	// Decided on a fresh read, never on the listing.
	defer e.wrote(meta.GetExternalName(cr), nil)
	sg, err := e.groups.GetSecurityGroup(ctx, meta.GetExternalName(cr))
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errGetSecurityGroup)
	}
	if !settingsUpToDate(cr, sg) {
		// The revision check keeps a concurrent change in Neutron from being overwritten
		// with what we read before it.
		if _, err := e.groups.UpdateSecurityGroup(ctx, sg.ID, desiredSettings(cr), sg.RevisionNumber); err != nil {
			if openstack.IsPreconditionFailed(err) {
				return managed.ExternalUpdate{}, errors.New(errUpdateConflict)
			}
			return managed.ExternalUpdate{}, errors.Wrap(err, errUpdateSecurityGrp)
		}
	}
	if want := desiredTags(cr); !tagsUpToDate(want, sg.Tags) {
		if err := e.groups.ReplaceSecurityGroupTags(ctx, sg.ID, want); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errTagSecurityGroup)
		}
	}
	_, err = e.syncRules(ctx, cr, sg)
	return managed.ExternalUpdate{}, err
}

// syncRules removes the rules that are not desired and creates the missing ones, and returns
// the group's rules as they now are. Removal comes first: a rule that differs only in a way
// Neutron ignores would otherwise be refused as a duplicate. What it changed is one Event per
// kind of change and reconcile: an Event per rule would be dropped by the event recorder's
// spam filter past about 25 for one object.
func (e *external) syncRules(ctx context.Context, cr *v1alpha1.SecurityGroup, sg *openstack.SecurityGroup) ([]openstack.Rule, error) {
	desired, _ := desiredRules(cr, sg.ID)
	d := diffRules(desired, sg.Rules)
	var deleted []openstack.Rule
	defer func() {
		if len(deleted) > 0 {
			e.record.Event(cr, event.Normal(reasonRuleDeleted, fmt.Sprintf("Deleted %d rule(s) not in spec.forProvider.rules: %s", len(deleted), describeRules(deleted))))
		}
	}()
	for _, r := range d.remove {
		if err := e.groups.DeleteRule(ctx, r.ID); err != nil && !openstack.IsNotFound(err) {
			return nil, errors.Wrapf(err, "%s %s", errDeleteRule, r.ID)
		}
		deleted = append(deleted, r)
	}
	kept := slices.DeleteFunc(slices.Clone(sg.Rules), func(r openstack.Rule) bool {
		return slices.ContainsFunc(deleted, func(d openstack.Rule) bool { return d.ID == r.ID })
	})
	if len(d.create) == 0 {
		return kept, nil
	}
	for i := range d.create {
		d.create[i].SecurityGroupID = sg.ID
	}
	created, err := e.groups.CreateRules(ctx, d.create)
	if err != nil {
		return nil, errors.Wrap(err, errCreateRules)
	}
	e.record.Event(cr, event.Normal(reasonRuleCreated, fmt.Sprintf("Created %d rule(s) of spec.forProvider.rules missing in Neutron: %s", len(created), describeRules(created))))
	return append(kept, created...), nil
}

// describeRules names rules by ID and identity, the first maxRulesInMessages of them.
func describeRules(rules []openstack.Rule) string {
	parts := make([]string, 0, min(len(rules), maxRulesInMessages)+1)
	for i, r := range rules {
		if i == maxRulesInMessages {
			parts = append(parts, fmt.Sprintf("and %d more", len(rules)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", r.ID, keyOf(r)))
	}
	return strings.Join(parts, ", ")
}

// unresolvedMessage says which rules wait for their remote group, and why they do not exist.
func unresolvedMessage(cr *v1alpha1.SecurityGroup, unresolved []int) string {
	parts := make([]string, 0, len(unresolved))
	for _, i := range unresolved {
		r := cr.Spec.ForProvider.Rules[i]
		what := "remoteGroupSelector matches no SecurityGroup with an ID"
		switch {
		case r.RefersToItsOwnGroup(cr):
			what = "the group's own ID is not known yet"
		case r.RemoteGroupRef != nil:
			what = fmt.Sprintf("remoteGroupRef %q names no SecurityGroup in this namespace with an ID (missing, or not created yet)", r.RemoteGroupRef.Name)
		case r.RemoteGroupSelector == nil:
			what = "remoteGroupID is empty"
		}
		parts = append(parts, fmt.Sprintf("spec.forProvider.rules[%d]: %s", i, what))
	}
	return fmt.Sprintf("%d rule(s) are not created until their remote group is known (without it they would allow any address): %s", len(unresolved), strings.Join(parts, "; "))
}

func (e *external) Delete(ctx context.Context, cr *v1alpha1.SecurityGroup) (managed.ExternalDelete, error) {
	id := meta.GetExternalName(cr)
	defer e.wrote(id, nil)
	err := e.groups.DeleteSecurityGroup(ctx, id)
	switch {
	case err == nil, openstack.IsNotFound(err):
		e.watch(cr, "")
		return managed.ExternalDelete{}, nil
	case openstack.IsConflict(err):
		ports, lerr := e.ports.ListPortsWithSecurityGroup(ctx, id)
		if lerr != nil {
			return managed.ExternalDelete{}, errors.Wrap(errors.Wrap(lerr, errListPortsInUse), errDeleteSecurityGrp)
		}
		return managed.ExternalDelete{}, errors.Errorf(errFmtInUse, len(ports), describePorts(ports))
	default:
		return managed.ExternalDelete{}, errors.Wrap(err, errDeleteSecurityGrp)
	}
}

func (e *external) Disconnect(_ context.Context) error { return nil }

func mayUpdate(p xpv2.ManagementPolicies) bool {
	return len(p) == 0 || slices.Contains(p, xpv2.ManagementActionAll) || slices.Contains(p, xpv2.ManagementActionUpdate)
}

func describePorts(ports []openstack.Port) string {
	parts := make([]string, 0, len(ports))
	for i, p := range ports {
		if i == maxPortsInUseMessages {
			parts = append(parts, fmt.Sprintf("and %d more", len(ports)-i))
			break
		}
		s := p.ID
		if p.DeviceID != "" {
			s += " (server " + p.DeviceID + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "ports this project cannot see"
	}
	return strings.Join(parts, ", ")
}

func desiredSettings(cr *v1alpha1.SecurityGroup) openstack.SecurityGroupSettings {
	p := cr.Spec.ForProvider
	return openstack.SecurityGroupSettings{
		Name:        ptr.Deref(p.Name, cr.GetName()),
		Description: ptr.Deref(p.Description, ""),
		Stateful:    p.Stateful,
	}
}

func settingsUpToDate(cr *v1alpha1.SecurityGroup, sg *openstack.SecurityGroup) bool {
	want := desiredSettings(cr)
	if want.Name != sg.Name || want.Description != sg.Description {
		return false
	}
	return want.Stateful == nil || sg.Stateful == nil || *want.Stateful == *sg.Stateful
}

// desiredTags are the spec's tags plus the identity tag, sorted.
func desiredTags(cr *v1alpha1.SecurityGroup) []string {
	tags := append([]string{identityTag(cr)}, cr.Spec.ForProvider.Tags...)
	sort.Strings(tags)
	return slices.Compact(tags)
}

func tagsUpToDate(want, have []string) bool {
	h := slices.Clone(have)
	sort.Strings(h)
	return slices.Equal(want, slices.Compact(h))
}

// lateInitialize fills unset fields from Neutron, so an imported group is not renamed or
// re-described. It reports whether it changed anything.
func lateInitialize(p *v1alpha1.SecurityGroupParameters, sg *openstack.SecurityGroup) bool {
	changed := false
	if p.Name == nil {
		p.Name, changed = ptr.To(sg.Name), true
	}
	if p.Description == nil && !strings.HasPrefix(sg.Description, identityTagPrefix) {
		// A description that is an identity marker is what a create cut short left, not
		// the group's description.
		p.Description, changed = ptr.To(sg.Description), true
	}
	if p.Stateful == nil && sg.Stateful != nil {
		p.Stateful, changed = ptr.To(*sg.Stateful), true
	}
	return changed
}

func observation(sg *openstack.SecurityGroup) v1alpha1.SecurityGroupObservation {
	o := v1alpha1.SecurityGroupObservation{
		ID:             sg.ID,
		Name:           sg.Name,
		Description:    sg.Description,
		Stateful:       sg.Stateful,
		Tags:           sg.Tags,
		ProjectID:      sg.ProjectID,
		RevisionNumber: sg.RevisionNumber,
	}
	if !sg.CreatedAt.IsZero() {
		o.CreatedAt = &metav1.Time{Time: sg.CreatedAt}
	}
	if !sg.UpdatedAt.IsZero() {
		o.UpdatedAt = &metav1.Time{Time: sg.UpdatedAt}
	}
	rules := slices.Clone(sg.Rules)
	// A stable order keeps status from changing (and triggering watches) on every poll.
	sort.Slice(rules, func(i, j int) bool { return rules[i].ID < rules[j].ID })
	for _, r := range rules {
		o.Rules = append(o.Rules, v1alpha1.SecurityGroupRuleObservation{
			ID:             r.ID,
			Direction:      r.Direction,
			EtherType:      r.EtherType,
			Protocol:       r.Protocol,
			PortRangeMin:   r.PortRangeMin,
			PortRangeMax:   r.PortRangeMax,
			RemoteIPPrefix: r.RemoteIPPrefix,
			RemoteGroupID:  r.RemoteGroupID,
			Description:    nonEmpty(r.Description),
		})
	}
	return o
}

func nonEmpty(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}
