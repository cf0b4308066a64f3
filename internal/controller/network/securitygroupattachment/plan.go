package securitygroupattachment

import (
	"fmt"
	"slices"
	"sort"

	"k8s.io/utils/ptr"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
)

// A portChange is what one port needs: the group added (attach) and/or groups removed.
type portChange struct {
	port     openstack.Port
	serverID string
	nodeName string
	attach   string   // the group to add, or ""
	detach   []string // groups to remove
	// reattach is true when the group was attached here before and someone removed it.
	reattach bool
}

// apply returns the port's new security groups: its current ones (other controllers' groups
// stay: append mode) with this change made.
func (c portChange) apply(current []string) []string {
	out := make([]string, 0, len(current)+1)
	for _, sg := range current {
		if !slices.Contains(c.detach, sg) && !slices.Contains(out, sg) {
			out = append(out, sg)
		}
	}
	if c.attach != "" && !slices.Contains(out, c.attach) {
		out = append(out, c.attach)
	}
	return out
}

// needed tells whether the port still needs the change.
func (c portChange) needed(current []string) bool {
	return !slices.Equal(c.apply(current), current)
}

// plan is the difference between where the group is and where it should be.
type plan struct {
	servers []v1alpha1.AttachedServer
	changes []portChange
}

func (p plan) upToDate() bool { return len(p.changes) == 0 }

// errors tells whether some targeted server cannot get the group at all.
func (p plan) errors() []v1alpha1.AttachedServer {
	var out []v1alpha1.AttachedServer
	for _, s := range p.servers {
		if s.State == v1alpha1.ServerError {
			out = append(out, s)
		}
	}
	return out
}

// makePlan compares the wanted servers with the ports Neutron has. previous is the group the
// recorded servers carry (it differs from sg after the spec names another group), recorded the
// servers attached before: those that are no longer wanted get the group removed.
func makePlan(sg, previous string, want map[string]string, recorded []v1alpha1.AttachedServer, ports []openstack.Port) plan {
	byServer := map[string][]openstack.Port{}
	for _, p := range ports {
		byServer[p.DeviceID] = append(byServer[p.DeviceID], p)
	}
	wasAttached := map[string]bool{}
	for _, r := range recorded {
		wasAttached[r.ServerID] = r.State == v1alpha1.ServerAttached
	}
	var drop []string
	if previous != "" && previous != sg {
		drop = []string{previous}
	}

	var pl plan
	for _, id := range sortedKeys(want) {
		s := v1alpha1.AttachedServer{ServerID: id, NodeName: want[id], State: v1alpha1.ServerAttached}
		ps := byServer[id]
		if len(ps) == 0 {
			s.State = v1alpha1.ServerError
			s.Reason = "the server has no Neutron ports in this project (deleted, or another project's)"
			pl.servers = append(pl.servers, s)
			continue
		}
		pending := 0
		for _, p := range ps {
			s.PortIDs = append(s.PortIDs, p.ID)
			if portSecurityOff(p) {
				s.State = v1alpha1.ServerError
				s.Reason = fmt.Sprintf("port %s has port security disabled, so it takes no security groups", p.ID)
				continue
			}
			c := portChange{port: p, serverID: id, nodeName: want[id], attach: sg, detach: drop, reattach: wasAttached[id]}
			if c.needed(p.SecurityGroups) {
				pl.changes = append(pl.changes, c)
				pending++
			}
		}
		if pending > 0 && s.State != v1alpha1.ServerError {
			s.State = v1alpha1.ServerPending
			s.Reason = fmt.Sprintf("the group is missing on %d of %d ports", pending, len(ps))
		}
		pl.servers = append(pl.servers, s)
	}

	gone := []string{sg}
	if previous != "" && previous != sg {
		gone = append(gone, previous)
	}
	for _, r := range recorded {
		if _, ok := want[r.ServerID]; ok {
			continue
		}
		s := v1alpha1.AttachedServer{ServerID: r.ServerID, NodeName: r.NodeName, State: v1alpha1.ServerPending, Reason: "no longer selected: detaching"}
		for _, p := range byServer[r.ServerID] {
			c := portChange{port: p, serverID: r.ServerID, nodeName: r.NodeName, detach: gone}
			if c.needed(p.SecurityGroups) {
				pl.changes = append(pl.changes, c)
				s.PortIDs = append(s.PortIDs, p.ID)
			}
		}
		// Forgotten once the group is off all its ports (or the server is gone).
		if len(s.PortIDs) > 0 {
			pl.servers = append(pl.servers, s)
		}
	}
	return pl
}

// stillAttached tells whether any of the ports carries one of the groups (deletion is done
// when none does).
func stillAttached(ports []openstack.Port, groups ...string) bool {
	for _, p := range ports {
		for _, g := range groups {
			if g != "" && slices.Contains(p.SecurityGroups, g) {
				return true
			}
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func portSecurityOff(p openstack.Port) bool { return !ptr.Deref(p.PortSecurityEnabled, true) }
