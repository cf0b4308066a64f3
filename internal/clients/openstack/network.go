package openstack

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errFmtNoNetwork    = "there is no network %q"
	errFmtManyNetworks = "more than one network is named %q: name it by ID"
	errFmtNoSubnet     = "there is no subnet %q"
	errFmtManySubnets  = "more than one subnet is named %q: name it by ID"
)

// A SecurityGroup as Neutron reports it, rules included.
type SecurityGroup struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	Description    string    `json:"description"`
	Stateful       *bool     `json:"stateful,omitempty"`
	Tags           []string  `json:"tags"`
	ProjectID      string    `json:"project_id"`
	RevisionNumber int64     `json:"revision_number"`
	Rules          []Rule    `json:"security_group_rules"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// A Rule of a security group. Nil means "any" (protocol, ports, remote), as in Neutron's API.
type Rule struct {
	ID              string  `json:"id,omitempty"`
	SecurityGroupID string  `json:"security_group_id,omitempty"`
	Direction       string  `json:"direction"`
	EtherType       string  `json:"ethertype"`
	Protocol        *string `json:"protocol"`
	PortRangeMin    *int32  `json:"port_range_min"`
	PortRangeMax    *int32  `json:"port_range_max"`
	RemoteIPPrefix  *string `json:"remote_ip_prefix"`
	RemoteGroupID   *string `json:"remote_group_id"`
	Description     *string `json:"description,omitempty"`
}

// SecurityGroupSettings are the writable attributes of a security group.
type SecurityGroupSettings struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Stateful    *bool  `json:"stateful,omitempty"`
}

// A Port as far as the provider needs it.
type Port struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	DeviceID       string   `json:"device_id"`
	DeviceOwner    string   `json:"device_owner"`
	SecurityGroups []string `json:"security_groups"`
	RevisionNumber int64    `json:"revision_number"`
	// PortSecurityEnabled false means the port takes no security groups at all.
	PortSecurityEnabled *bool     `json:"port_security_enabled,omitempty"`
	Description         string    `json:"description"`
	MACAddress          string    `json:"mac_address"`
	FixedIPs            []FixedIP `json:"fixed_ips"`
	NetworkID           string    `json:"network_id"`
	CreatedAt           time.Time `json:"created_at"`
}

// A FixedIP is an address a port has on a subnet.
type FixedIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

// PortSettings are what a port is created with.
type PortSettings struct {
	Name, Description, NetworkID, SubnetID string
	SecurityGroups                         []string
}

// Networks is the part of Neutron's API that makes ports of machines.
type Networks interface {
	// FindNetwork returns the ID of the network with this ID or name.
	FindNetwork(ctx context.Context, nameOrID string) (string, error)
	// FindSubnet returns the IDs of the subnet with this ID or name and of its network.
	FindSubnet(ctx context.Context, nameOrID string) (networkID, subnetID string, err error)
	// CreatePort creates a port with an address of the subnet (any of the network's when
	// SubnetID is empty).
	CreatePort(ctx context.Context, s PortSettings) (*Port, error)
	// ListPortsByDescription returns the ports whose description is exactly this. (Neutron
	// before 2023.2 cannot tag a port as it creates it; a description can, so a port is never
	// made without the identity it is found by.)
	ListPortsByDescription(ctx context.Context, description string) ([]Port, error)
	// DeletePort deletes a port.
	DeletePort(ctx context.Context, id string) error
}

// SecurityGroups is the part of Neutron's API that manages security groups and their rules.
type SecurityGroups interface {
	// GetSecurityGroup returns the group with its rules in one call.
	GetSecurityGroup(ctx context.Context, id string) (*SecurityGroup, error)
	// ListSecurityGroupsByTag returns the groups that carry a tag, and the groups that
	// CreateSecurityGroup was creating with it as their identity when it was cut short.
	ListSecurityGroupsByTag(ctx context.Context, tag string) ([]SecurityGroup, error)
	// CreateSecurityGroup creates a group carrying the supplied tags, among them identity:
	// the tag ListSecurityGroupsByTag finds the group by, however the create ends. Neutron
	// before 2023.2 cannot tag in the create call: there the group is created with identity
	// as its description, tagged, then given its description, so that a process killed in
	// between leaves a group that can be found. When a later call fails, the created group is
	// returned with the error, so that the caller can still record its ID.
	CreateSecurityGroup(ctx context.Context, s SecurityGroupSettings, tags []string, identity string) (*SecurityGroup, error)
	// UpdateSecurityGroup changes a group's attributes if its revision is still the supplied
	// one (zero skips the check).
	UpdateSecurityGroup(ctx context.Context, id string, s SecurityGroupSettings, revision int64) (*SecurityGroup, error)
	// ReplaceSecurityGroupTags sets the group's tags to exactly the supplied ones.
	ReplaceSecurityGroupTags(ctx context.Context, id string, tags []string) error
	// DeleteSecurityGroup deletes the group and its rules in one call.
	DeleteSecurityGroup(ctx context.Context, id string) error
	// CreateRules creates rules in one call; Neutron creates all or none.
	CreateRules(ctx context.Context, rules []Rule) ([]Rule, error)
	// DeleteRule deletes one rule.
	DeleteRule(ctx context.Context, id string) error
}

// Ports is the part of Neutron's API that reads and changes ports.
type Ports interface {
	// ListPortsWithSecurityGroup returns the ports a security group is applied to.
	ListPortsWithSecurityGroup(ctx context.Context, securityGroupID string) ([]Port, error)
	// ListPortsOfDevices returns the ports of the supplied devices (servers), in as few calls
	// as the URL length allows.
	ListPortsOfDevices(ctx context.Context, deviceIDs []string) ([]Port, error)
	// GetPort returns one port.
	GetPort(ctx context.Context, id string) (*Port, error)
	// SetPortSecurityGroups sets a port's security groups if its revision is still the
	// supplied one, so that a concurrent change by another writer is never overwritten.
	SetPortSecurityGroups(ctx context.Context, id string, securityGroups []string, revision int64) (*Port, error)
}

// neutron implements the narrow interfaces above on a gophercloud service client.
type neutron struct {
	c          *gophercloud.ServiceClient
	extensions *extensionCache
}

var (
	_ SecurityGroups = &neutron{}
	_ Ports          = &neutron{}
	_ Networks       = &neutron{}
)

func (n *neutron) GetSecurityGroup(ctx context.Context, id string) (*SecurityGroup, error) {
	var body struct {
		SecurityGroup SecurityGroup `json:"security_group"`
	}
	_, err := n.c.Get(ctx, n.c.ServiceURL("security-groups", id), &body, nil)
	if err != nil {
		return nil, err
	}
	return &body.SecurityGroup, nil
}

func (n *neutron) ListSecurityGroupsByTag(ctx context.Context, tag string) ([]SecurityGroup, error) {
	found, err := n.listSecurityGroups(ctx, url.Values{"tags": []string{tag}}, func(sg SecurityGroup) bool { return slices.Contains(sg.Tags, tag) })
	if err != nil {
		return nil, err
	}
	tagOnCreate, err := n.extensions.has(ctx, n.c, "tag-creation")
	if err != nil || tagOnCreate {
		return found, err
	}
	// A create cut short between its calls left the identity in the description.
	marked, err := n.listSecurityGroups(ctx, url.Values{"description": []string{tag}}, func(sg SecurityGroup) bool { return sg.Description == tag })
	if err != nil {
		return nil, err
	}
	for _, sg := range marked {
		if !slices.ContainsFunc(found, func(f SecurityGroup) bool { return f.ID == sg.ID }) {
			found = append(found, sg)
		}
	}
	return found, nil
}

// listSecurityGroups lists the groups the query selects, keeping those keep accepts: a
// Neutron that ignores a filter returns every group.
func (n *neutron) listSecurityGroups(ctx context.Context, q url.Values, keep func(SecurityGroup) bool) ([]SecurityGroup, error) {
	var body struct {
		SecurityGroups []SecurityGroup `json:"security_groups"`
	}
	if _, err := n.c.Get(ctx, n.c.ServiceURL("security-groups")+"?"+q.Encode(), &body, nil); err != nil {
		return nil, err
	}
	out := body.SecurityGroups[:0]
	for _, sg := range body.SecurityGroups {
		if keep(sg) {
			out = append(out, sg)
		}
	}
	return out, nil
}

func (n *neutron) CreateSecurityGroup(ctx context.Context, s SecurityGroupSettings, tags []string, identity string) (*SecurityGroup, error) {
	tagOnCreate, err := n.extensions.has(ctx, n.c, "tag-creation")
	if err != nil {
		return nil, err
	}
	req := struct {
		SecurityGroup struct {
			SecurityGroupSettings
			Tags []string `json:"tags,omitempty"`
		} `json:"security_group"`
	}{}
	req.SecurityGroup.SecurityGroupSettings = s
	if tagOnCreate {
		req.SecurityGroup.Tags = tags
	} else if identity != "" {
		req.SecurityGroup.Description = identity
	}
	var body struct {
		SecurityGroup SecurityGroup `json:"security_group"`
	}
	if _, err := n.c.Post(ctx, n.c.ServiceURL("security-groups"), req, &body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusCreated}}); err != nil {
		return nil, err
	}
	sg := &body.SecurityGroup
	if tagOnCreate || (len(tags) == 0 && identity == "") {
		return sg, nil
	}
	if len(tags) > 0 {
		if err := n.ReplaceSecurityGroupTags(ctx, sg.ID, tags); err != nil {
			return sg, err
		}
		sg.Tags = tags
	}
	if sg.Description != s.Description {
		updated, err := n.UpdateSecurityGroup(ctx, sg.ID, s, 0)
		if err != nil {
			return sg, err
		}
		updated.Tags = sg.Tags
		sg = updated
	}
	return sg, nil
}

func (n *neutron) UpdateSecurityGroup(ctx context.Context, id string, s SecurityGroupSettings, revision int64) (*SecurityGroup, error) {
	req := map[string]any{"security_group": s}
	var body struct {
		SecurityGroup SecurityGroup `json:"security_group"`
	}
	_, err := n.c.Put(ctx, n.c.ServiceURL("security-groups", id), req, &body, &gophercloud.RequestOpts{
		OkCodes:     []int{http.StatusOK},
		MoreHeaders: ifMatch(revision),
	})
	if err != nil {
		return nil, err
	}
	return &body.SecurityGroup, nil
}

func (n *neutron) ReplaceSecurityGroupTags(ctx context.Context, id string, tags []string) error {
	if tags == nil {
		tags = []string{}
	}
	_, err := n.c.Put(ctx, n.c.ServiceURL("security-groups", id, "tags"), map[string]any{"tags": tags}, nil, &gophercloud.RequestOpts{OkCodes: []int{http.StatusOK}})
	return err
}

func (n *neutron) DeleteSecurityGroup(ctx context.Context, id string) error {
	_, err := n.c.Delete(ctx, n.c.ServiceURL("security-groups", id), nil)
	return err
}

func (n *neutron) CreateRules(ctx context.Context, rules []Rule) ([]Rule, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	var body struct {
		Rules []Rule `json:"security_group_rules"`
	}
	_, err := n.c.Post(ctx, n.c.ServiceURL("security-group-rules"), map[string]any{"security_group_rules": rules}, &body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusCreated}})
	if err != nil {
		return nil, err
	}
	return body.Rules, nil
}

func (n *neutron) DeleteRule(ctx context.Context, id string) error {
	_, err := n.c.Delete(ctx, n.c.ServiceURL("security-group-rules", id), nil)
	return err
}

// listPorts lists the ports the query selects.
func (n *neutron) listPorts(ctx context.Context, q url.Values) ([]Port, error) {
	var body struct {
		Ports []Port `json:"ports"`
	}
	if _, err := n.c.Get(ctx, n.c.ServiceURL("ports")+"?"+q.Encode(), &body, nil); err != nil {
		return nil, err
	}
	return body.Ports, nil
}

func (n *neutron) ListPortsWithSecurityGroup(ctx context.Context, securityGroupID string) ([]Port, error) {
	ports, err := n.listPorts(ctx, url.Values{"security_groups": []string{securityGroupID}})
	if err != nil {
		return nil, err
	}
	out := ports[:0]
	for _, p := range ports {
		if slices.Contains(p.SecurityGroups, securityGroupID) {
			out = append(out, p)
		}
	}
	return out, nil
}

// devicesPerList bounds the device_id filters of one port list, keeping the URL short.
const devicesPerList = 40

func (n *neutron) ListPortsOfDevices(ctx context.Context, deviceIDs []string) ([]Port, error) {
	var out []Port
	for start := 0; start < len(deviceIDs); start += devicesPerList {
		end := min(start+devicesPerList, len(deviceIDs))
		ports, err := n.listPorts(ctx, url.Values{"device_id": deviceIDs[start:end]})
		if err != nil {
			return nil, err
		}
		out = append(out, ports...)
	}
	return out, nil
}

func (n *neutron) GetPort(ctx context.Context, id string) (*Port, error) {
	var body struct {
		Port Port `json:"port"`
	}
	if _, err := n.c.Get(ctx, n.c.ServiceURL("ports", id), &body, nil); err != nil {
		return nil, err
	}
	return &body.Port, nil
}

func (n *neutron) SetPortSecurityGroups(ctx context.Context, id string, securityGroups []string, revision int64) (*Port, error) {
	if securityGroups == nil {
		securityGroups = []string{}
	}
	req := map[string]any{"port": map[string]any{"security_groups": securityGroups}}
	var body struct {
		Port Port `json:"port"`
	}
	_, err := n.c.Put(ctx, n.c.ServiceURL("ports", id), req, &body, &gophercloud.RequestOpts{
		OkCodes:     []int{http.StatusOK},
		MoreHeaders: ifMatch(revision),
	})
	if err != nil {
		return nil, err
	}
	return &body.Port, nil
}

func (n *neutron) FindNetwork(ctx context.Context, nameOrID string) (string, error) {
	var body struct {
		Networks []struct {
			ID string `json:"id"`
		} `json:"networks"`
	}
	for _, key := range []string{"id", "name"} {
		q := url.Values{key: []string{nameOrID}}
		if _, err := n.c.Get(ctx, n.c.ServiceURL("networks")+"?"+q.Encode(), &body, nil); err != nil {
			return "", err
		}
		switch len(body.Networks) {
		case 0:
			continue
		case 1:
			return body.Networks[0].ID, nil
		}
		return "", errors.Errorf(errFmtManyNetworks, nameOrID)
	}
	return "", errors.Errorf(errFmtNoNetwork, nameOrID)
}

func (n *neutron) FindSubnet(ctx context.Context, nameOrID string) (string, string, error) {
	var body struct {
		Subnets []struct {
			ID        string `json:"id"`
			NetworkID string `json:"network_id"`
		} `json:"subnets"`
	}
	for _, key := range []string{"id", "name"} {
		q := url.Values{key: []string{nameOrID}}
		if _, err := n.c.Get(ctx, n.c.ServiceURL("subnets")+"?"+q.Encode(), &body, nil); err != nil {
			return "", "", err
		}
		switch len(body.Subnets) {
		case 0:
			continue
		case 1:
			return body.Subnets[0].NetworkID, body.Subnets[0].ID, nil
		}
		return "", "", errors.Errorf(errFmtManySubnets, nameOrID)
	}
	return "", "", errors.Errorf(errFmtNoSubnet, nameOrID)
}

func (n *neutron) CreatePort(ctx context.Context, s PortSettings) (*Port, error) {
	p := map[string]any{
		"name": s.Name, "description": s.Description, "network_id": s.NetworkID,
		"security_groups": s.SecurityGroups,
	}
	if s.SubnetID != "" {
		p["fixed_ips"] = []map[string]string{{"subnet_id": s.SubnetID}}
	}
	var body struct {
		Port Port `json:"port"`
	}
	if _, err := n.c.Post(ctx, n.c.ServiceURL("ports"), map[string]any{"port": p}, &body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusCreated}}); err != nil {
		return nil, err
	}
	return &body.Port, nil
}

func (n *neutron) ListPortsByDescription(ctx context.Context, description string) ([]Port, error) {
	var body struct {
		Ports []Port `json:"ports"`
	}
	q := url.Values{"description": []string{description}}
	if _, err := n.c.Get(ctx, n.c.ServiceURL("ports")+"?"+q.Encode(), &body, nil); err != nil {
		return nil, err
	}
	out := body.Ports[:0]
	for _, p := range body.Ports {
		if p.Description == description {
			out = append(out, p)
		}
	}
	return out, nil
}

func (n *neutron) DeletePort(ctx context.Context, id string) error {
	_, err := n.c.Delete(ctx, n.c.ServiceURL("ports", id), &gophercloud.RequestOpts{OkCodes: []int{http.StatusNoContent}})
	return err
}

// ifMatch makes Neutron refuse a write when the resource changed since it was read (412).
func ifMatch(revision int64) map[string]string {
	if revision <= 0 {
		return nil
	}
	return map[string]string{"If-Match": "revision_number=" + strconv.FormatInt(revision, 10)}
}

// IsNotFound tells whether Neutron or Keystone answered 404.
func IsNotFound(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusNotFound) }

// IsConflict tells whether Neutron answered 409 (in use, duplicate rule).
func IsConflict(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusConflict) }

// IsPreconditionFailed tells whether a revision check (If-Match) failed.
func IsPreconditionFailed(err error) bool {
	return gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed)
}

// Describe returns a short, person-readable form of an API error: the status and the
// service's own message, without request bodies (which could hold secrets).
func Describe(err error) string {
	var e gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &e) {
		return http.StatusText(e.Actual) + ": " + apiMessage(e.Body)
	}
	return err.Error()
}

// Explain is err with Describe's message (Nova's "Quota exceeded for instances: ...", not
// gophercloud's "Expected HTTP response code [202] when accessing [POST ...]"), still
// matching what err matches (IsNotFound and the like).
func Explain(err error) error {
	if err == nil {
		return nil
	}
	return explained{err}
}

type explained struct{ cause error }

func (e explained) Error() string { return Describe(e.cause) }
func (e explained) Unwrap() error { return e.cause }

// extensionCache remembers which API extensions a Neutron offers: they do not change while a
// session lives, and looking them up on every create would double its cost.
type extensionCache struct {
	once  sync.Once
	names map[string]bool
	err   error
}

func (e *extensionCache) has(ctx context.Context, c *gophercloud.ServiceClient, alias string) (bool, error) {
	e.once.Do(func() {
		var body struct {
			Extensions []struct {
				Alias string `json:"alias"`
			} `json:"extensions"`
		}
		if _, err := c.Get(ctx, c.ServiceURL("extensions"), &body, nil); err != nil {
			e.err = errors.Wrap(err, "cannot list the Neutron API extensions")
			return
		}
		e.names = map[string]bool{}
		for _, x := range body.Extensions {
			e.names[x.Alias] = true
		}
	})
	if e.err != nil {
		// Let the next call try again rather than remember a passing failure forever.
		err := e.err
		*e = extensionCache{}
		return false, err
	}
	return e.names[alias], nil
}
