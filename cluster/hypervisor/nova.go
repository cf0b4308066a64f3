package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// The hypervisor follows Nova: every ACTIVE server runs here, every other one does not, and a
// server Nova no longer has loses its disk. Nova's fake driver keeps nothing but records, so
// the test bed's servers really run only because of this loop.

// computeMicroversion is the first that gives admins a server's user-data in a listing.
const computeMicroversion = "2.79"

// bootRetry is how long a server whose boot failed waits before the next attempt.
const bootRetry = 10 * time.Second

type cloud struct {
	compute, network *gophercloud.ServiceClient
}

type credentials struct {
	AuthURL, Username, Password, Project, Region string
}

func connect(ctx context.Context, c credentials) (*cloud, error) {
	provider, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: c.AuthURL, Username: c.Username, Password: c.Password,
		DomainName: "Default", TenantName: c.Project, AllowReauth: true,
	})
	if err != nil {
		return nil, fmt.Errorf("authenticate as %s: %w", c.Username, err)
	}
	eo := gophercloud.EndpointOpts{Region: c.Region}
	compute, err := openstack.NewComputeV2(provider, eo)
	if err != nil {
		return nil, err
	}
	compute.Microversion = computeMicroversion
	network, err := openstack.NewNetworkV2(provider, eo)
	if err != nil {
		return nil, err
	}
	return &cloud{compute: compute, network: network}, nil
}

func (c *cloud) servers(ctx context.Context) ([]servers.Server, error) {
	pages, err := servers.List(c.compute, servers.ListOpts{AllTenants: true}).AllPages(ctx)
	if err != nil {
		return nil, err
	}
	return servers.ExtractServers(pages)
}

// nic reads the server's first port and its subnet.
func (c *cloud) nic(ctx context.Context, serverID string) (nic, error) {
	pages, err := ports.List(c.network, ports.ListOpts{DeviceID: serverID}).AllPages(ctx)
	if err != nil {
		return nic{}, err
	}
	ps, err := ports.ExtractPorts(pages)
	if err != nil {
		return nic{}, err
	}
	if len(ps) == 0 || len(ps[0].FixedIPs) == 0 {
		return nic{}, errors.New("the server has no port with a fixed IP")
	}
	p := ps[0]
	sn, err := subnets.Get(ctx, c.network, p.FixedIPs[0].SubnetID).Extract()
	if err != nil {
		return nic{}, err
	}
	n := nic{MAC: p.MACAddress, SubnetID: sn.ID}
	if n.IP, err = netip.ParseAddr(p.FixedIPs[0].IPAddress); err != nil {
		return nic{}, err
	}
	if n.Subnet, err = netip.ParsePrefix(sn.CIDR); err != nil {
		return nic{}, err
	}
	if sn.GatewayIP != "" {
		if n.Gateway, err = netip.ParseAddr(sn.GatewayIP); err != nil {
			return nic{}, err
		}
	}
	return n, nil
}

type hypervisor struct {
	cloud  *cloud
	host   *host
	failed map[string]time.Time
}

// reconcile makes the host run exactly the ACTIVE servers.
func (hv *hypervisor) reconcile(ctx context.Context) error {
	all, err := hv.cloud.servers(ctx)
	if err != nil {
		return fmt.Errorf("list servers: %w", err)
	}
	exists := make(map[string]bool, len(all))
	for _, s := range all {
		exists[s.ID] = true
		running := hv.host.running(s.ID)
		switch {
		case s.Status == "ACTIVE" && !running:
			if t, ok := hv.failed[s.ID]; ok && time.Since(t) < bootRetry {
				continue
			}
			if err := hv.boot(ctx, s); err != nil {
				hv.failed[s.ID] = time.Now()
				log.Printf("server %s (%s): boot failed: %v", s.ID, s.Name, err)
				continue
			}
			delete(hv.failed, s.ID)
			log.Printf("server %s (%s): booted", s.ID, s.Name)
		case s.Status != "ACTIVE" && running:
			hv.host.halt(ctx, s.ID)
			log.Printf("server %s (%s): halted (status %s)", s.ID, s.Name, s.Status)
		}
	}
	for _, id := range hv.host.known() {
		if !exists[id] {
			hv.host.destroy(ctx, id)
			delete(hv.failed, id)
			log.Printf("server %s: deleted in Nova, its disk is gone", id)
		}
	}
	// A subnet's bridge goes with its last server.
	removeBridges()
	return nil
}

func (hv *hypervisor) boot(ctx context.Context, s servers.Server) error {
	n, err := hv.cloud.nic(ctx, s.ID)
	if err != nil {
		return err
	}
	var userData []byte
	if s.Userdata != nil {
		if userData, err = base64.StdEncoding.DecodeString(*s.Userdata); err != nil {
			return fmt.Errorf("user_data is not base64: %w", err)
		}
	}
	return hv.host.boot(s.ID, s.Name, userData, n)
}
