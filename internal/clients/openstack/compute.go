package openstack

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ComputeMicroversion is the Nova API version the provider speaks: 2.52 tags servers as it
// creates them (so a server is never untagged), 2.64 takes a server group's single policy.
const ComputeMicroversion = "2.79"

const (
	errFmtNoFlavor     = "there is no flavor %q"
	errFmtManyFlavors  = "more than one flavor is named %q: name it by ID"
	errFmtNoImage      = "there is no image %q"
	errFmtManyImages   = "more than one image is named %q: name it by ID"
	errComputeEndpoint = "cannot find the compute (Nova) endpoint in the Keystone catalog"
	errImageEndpoint   = "cannot find the image (Glance) endpoint in the Keystone catalog"
	errVolumeEndpoint  = "cannot find the block-storage (Cinder) endpoint in the Keystone catalog: members that boot from volumes need it"
)

// A Server as far as the provider needs it.
type Server struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Status   string            `json:"status"`
	Tags     []string          `json:"tags"`
	Metadata map[string]string `json:"metadata"`
	// Zone is the availability zone the server runs in.
	Zone string `json:"OS-EXT-AZ:availability_zone"`
	// Host is the compute host; Nova shows it to admins only.
	Host  string `json:"OS-EXT-SRV-ATTR:host"`
	Fault *struct {
		Message string `json:"message"`
	} `json:"fault,omitempty"`
}

// A Flavor as far as quotas go: what one server of it takes.
type Flavor struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	VCPUs int    `json:"vcpus"`
	// RAM in MiB.
	RAM int `json:"ram"`
}

// Limits are the project's absolute compute limits and its use of them; a maximum of -1 is
// unlimited.
type Limits struct {
	MaxInstances  int `json:"maxTotalInstances"`
	UsedInstances int `json:"totalInstancesUsed"`
	MaxCores      int `json:"maxTotalCores"`
	UsedCores     int `json:"totalCoresUsed"`
	// RAM in MiB.
	MaxRAM  int `json:"maxTotalRAMSize"`
	UsedRAM int `json:"totalRAMUsed"`
}

// ServerSettings are what a server is created with.
type ServerSettings struct {
	Name, FlavorID, ImageID, Zone, KeyPair, PortID, ServerGroupID string
	// BootVolumeID, when set, is the volume the server boots from (ImageID is then only
	// what the volume was made from); Nova deletes it with the server.
	BootVolumeID string
	UserData     []byte
	Tags         []string
	Metadata     map[string]string
}

// A ServerGroup places servers on hosts by a policy.
type ServerGroup struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Policy string `json:"policy"`
}

// Compute is the part of Nova's API that runs the provider's servers.
type Compute interface {
	// FindFlavor returns the flavor with this ID or name.
	FindFlavor(ctx context.Context, nameOrID string) (Flavor, error)
	// Limits returns the project's compute quota and its use.
	Limits(ctx context.Context) (Limits, error)
	// ListServersByTag returns the project's servers that carry the tag.
	ListServersByTag(ctx context.Context, tag string) ([]Server, error)
	// CreateServer boots a server.
	CreateServer(ctx context.Context, s ServerSettings) (*Server, error)
	// DeleteServer deletes a server (Nova deletes it in the background).
	DeleteServer(ctx context.Context, id string) error
	// ListServerGroups returns the project's server groups of this name.
	ListServerGroups(ctx context.Context, name string) ([]ServerGroup, error)
	// CreateServerGroup creates a server group with one policy.
	CreateServerGroup(ctx context.Context, name, policy string) (*ServerGroup, error)
	// DeleteServerGroup deletes a server group.
	DeleteServerGroup(ctx context.Context, id string) error
}

// Images is the part of Glance's API that finds images.
type Images interface {
	// FindImage returns the ID of the image with this ID or name.
	FindImage(ctx context.Context, nameOrID string) (string, error)
}

// maxFaultReads bounds the servers whose fault one listing reads one by one.
const maxFaultReads = 8

// faultsToRead are the servers of a listing whose fault must be read from the server itself:
// Nova lists a failed server without it (a server that never left the scheduler lives in
// cell0). A cluster has a handful of servers, but the tag is the tenant's to put on any
// number, so at most maxFaultReads.
func faultsToRead(ss []Server) []int {
	var out []int
	for i, s := range ss {
		if s.Status == "ERROR" && s.Fault == nil && len(out) < maxFaultReads {
			out = append(out, i)
		}
	}
	return out
}

type nova struct{ c *gophercloud.ServiceClient }

var _ Compute = &nova{}

func (n *nova) get(ctx context.Context, u string, body any) error {
	_, err := n.c.Get(ctx, u, body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusOK}})
	return err
}

func (n *nova) FindFlavor(ctx context.Context, nameOrID string) (Flavor, error) {
	var one struct {
		Flavor Flavor `json:"flavor"`
	}
	err := n.get(ctx, n.c.ServiceURL("flavors", url.PathEscape(nameOrID)), &one)
	if err == nil {
		return one.Flavor, nil
	}
	if !IsNotFound(err) {
		return Flavor{}, err
	}
	var all struct {
		Flavors []Flavor `json:"flavors"`
	}
	if err := n.get(ctx, n.c.ServiceURL("flavors", "detail")+"?is_public=None", &all); err != nil {
		return Flavor{}, err
	}
	var found []Flavor
	for _, f := range all.Flavors {
		if f.Name == nameOrID {
			found = append(found, f)
		}
	}
	switch len(found) {
	case 0:
		return Flavor{}, errors.Errorf(errFmtNoFlavor, nameOrID)
	case 1:
		return found[0], nil
	}
	return Flavor{}, errors.Errorf(errFmtManyFlavors, nameOrID)
}

func (n *nova) Limits(ctx context.Context) (Limits, error) {
	var body struct {
		Limits struct {
			Absolute Limits `json:"absolute"`
		} `json:"limits"`
	}
	if err := n.get(ctx, n.c.ServiceURL("limits"), &body); err != nil {
		return Limits{}, err
	}
	return body.Limits.Absolute, nil
}

func (n *nova) ListServersByTag(ctx context.Context, tag string) ([]Server, error) {
	var body struct {
		Servers []Server `json:"servers"`
	}
	q := url.Values{"tags": []string{tag}}
	if err := n.get(ctx, n.c.ServiceURL("servers", "detail")+"?"+q.Encode(), &body); err != nil {
		return nil, err
	}
	for _, i := range faultsToRead(body.Servers) {
		var one struct {
			Server Server `json:"server"`
		}
		if err := n.get(ctx, n.c.ServiceURL("servers", body.Servers[i].ID), &one); err == nil {
			body.Servers[i].Fault = one.Server.Fault
		}
	}
	return body.Servers, nil
}

func (n *nova) CreateServer(ctx context.Context, s ServerSettings) (*Server, error) {
	srv := map[string]any{
		"name": s.Name, "flavorRef": s.FlavorID, "imageRef": s.ImageID,
		"networks":  []map[string]string{{"port": s.PortID}},
		"user_data": base64.StdEncoding.EncodeToString(s.UserData),
		"tags":      s.Tags,
	}
	if s.BootVolumeID != "" {
		delete(srv, "imageRef")
		srv["block_device_mapping_v2"] = []map[string]any{{
			"uuid": s.BootVolumeID, "source_type": "volume", "destination_type": "volume",
			"boot_index": 0, "delete_on_termination": true,
		}}
	}
	if s.Zone != "" {
		srv["availability_zone"] = s.Zone
	}
	if s.KeyPair != "" {
		srv["key_name"] = s.KeyPair
	}
	if len(s.Metadata) > 0 {
		srv["metadata"] = s.Metadata
	}
	req := map[string]any{"server": srv}
	if s.ServerGroupID != "" {
		req["os:scheduler_hints"] = map[string]string{"group": s.ServerGroupID}
	}
	var body struct {
		Server Server `json:"server"`
	}
	if _, err := n.c.Post(ctx, n.c.ServiceURL("servers"), req, &body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusAccepted}}); err != nil {
		return nil, err
	}
	body.Server.Name, body.Server.Status = s.Name, "BUILD"
	return &body.Server, nil
}

func (n *nova) DeleteServer(ctx context.Context, id string) error {
	_, err := n.c.Delete(ctx, n.c.ServiceURL("servers", id), &gophercloud.RequestOpts{OkCodes: []int{http.StatusNoContent}})
	return err
}

func (n *nova) ListServerGroups(ctx context.Context, name string) ([]ServerGroup, error) {
	var body struct {
		ServerGroups []ServerGroup `json:"server_groups"`
	}
	if err := n.get(ctx, n.c.ServiceURL("os-server-groups"), &body); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(body.ServerGroups, func(g ServerGroup) bool { return g.Name != name }), nil
}

func (n *nova) CreateServerGroup(ctx context.Context, name, policy string) (*ServerGroup, error) {
	req := map[string]any{"server_group": map[string]any{"name": name, "policy": policy}}
	var body struct {
		ServerGroup ServerGroup `json:"server_group"`
	}
	if _, err := n.c.Post(ctx, n.c.ServiceURL("os-server-groups"), req, &body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusOK}}); err != nil {
		return nil, err
	}
	return &body.ServerGroup, nil
}

func (n *nova) DeleteServerGroup(ctx context.Context, id string) error {
	_, err := n.c.Delete(ctx, n.c.ServiceURL("os-server-groups", id), &gophercloud.RequestOpts{OkCodes: []int{http.StatusNoContent}})
	return err
}

type glance struct{ c *gophercloud.ServiceClient }

var _ Images = &glance{}

func (g *glance) FindImage(ctx context.Context, nameOrID string) (string, error) {
	var body struct {
		Images []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"images"`
	}
	// Glance filters by ID only through the path, and by name through the query.
	var one struct {
		ID string `json:"id"`
	}
	if _, err := g.c.Get(ctx, g.c.ServiceURL("images", url.PathEscape(nameOrID)), &one, nil); err == nil {
		return one.ID, nil
	} else if !IsNotFound(err) && !gophercloud.ResponseCodeIs(err, http.StatusBadRequest) {
		return "", err
	}
	q := url.Values{"name": []string{nameOrID}}
	if _, err := g.c.Get(ctx, g.c.ServiceURL("images")+"?"+q.Encode(), &body, nil); err != nil {
		return "", err
	}
	switch len(body.Images) {
	case 0:
		return "", errors.Errorf(errFmtNoImage, nameOrID)
	case 1:
		return body.Images[0].ID, nil
	}
	return "", errors.Errorf(errFmtManyImages, nameOrID)
}

// FaultMessage is Nova's fault message of a failed server, if any.
func (s Server) FaultMessage() string {
	if s.Fault == nil {
		return ""
	}
	return strings.TrimSpace(s.Fault.Message)
}
