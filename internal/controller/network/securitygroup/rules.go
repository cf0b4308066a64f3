package securitygroup

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
)

// protocolNumbers maps the protocol names Neutron accepts to their IANA numbers, so that "tcp"
// and "6" are the same rule.
var protocolNumbers = map[string]int{
	"hopopt": 0, "icmp": 1, "igmp": 2, "ipip": 4, "tcp": 6, "egp": 8, "udp": 17,
	"ipv6-encap": 41, "ipv6-route": 43, "ipv6-frag": 44, "rsvp": 46, "gre": 47, "esp": 50,
	"ah": 51, "ipv6-icmp": 58, "icmpv6": 58, "ipv6-nonxt": 59, "ipv6-opts": 60, "ospf": 89,
	"pgm": 113, "vrrp": 112, "sctp": 132, "udplite": 136, "dccp": 33,
}

const (
	protoICMP   = 1
	protoICMPv6 = 58
)

// portProtocols have port ranges; ICMP uses the same fields for type and code.
var portProtocols = map[int]bool{6: true, 17: true, 132: true, 33: true, 136: true}

// ruleKey is the identity of a rule: two rules with equal keys allow exactly the same traffic,
// so Neutron treats them as duplicates and the provider treats them as the same rule.
type ruleKey struct {
	direction string
	etherType string
	protocol  int // -1 for any protocol
	portMin   int32
	portMax   int32 // -1 for "not set"
	remoteIP  string
	remoteSG  string
}

func (k ruleKey) String() string {
	var b strings.Builder
	b.WriteString(k.direction + " " + k.etherType)
	switch {
	case k.protocol < 0:
		b.WriteString(" any protocol")
	default:
		fmt.Fprintf(&b, " protocol %d", k.protocol)
	}
	if k.portMin >= 0 {
		what := "ports"
		if k.protocol == protoICMP || k.protocol == protoICMPv6 {
			what = "type/code"
		}
		fmt.Fprintf(&b, " %s %d-%d", what, k.portMin, k.portMax)
	}
	switch {
	case k.remoteSG != "":
		b.WriteString(" remote group " + k.remoteSG)
	case k.remoteIP != "":
		b.WriteString(" remote " + k.remoteIP)
	default:
		b.WriteString(" any remote")
	}
	return b.String()
}

// keyOf normalises a rule the way Neutron compares rules: protocol names become numbers
// (ICMP for IPv6 is ICMPv6), a full port range is the same as no range, a remote prefix is
// masked and "everything" (0.0.0.0/0, ::/0) is the same as no prefix.
func keyOf(r openstack.Rule) ruleKey {
	k := ruleKey{
		direction: r.Direction,
		etherType: r.EtherType,
		protocol:  protocolNumber(ptr.Deref(r.Protocol, "")),
		portMin:   -1,
		portMax:   -1,
		remoteSG:  ptr.Deref(r.RemoteGroupID, ""),
	}
	if k.etherType == "" {
		k.etherType = v1alpha1.EtherTypeIPv4
	}
	if k.etherType == v1alpha1.EtherTypeIPv6 && k.protocol == protoICMP {
		k.protocol = protoICMPv6
	}
	switch {
	case portProtocols[k.protocol]:
		if r.PortRangeMin != nil || r.PortRangeMax != nil {
			k.portMin, k.portMax = ptr.Deref(r.PortRangeMin, 1), ptr.Deref(r.PortRangeMax, 65535)
		}
		if k.portMin == 1 && k.portMax == 65535 {
			k.portMin, k.portMax = -1, -1
		}
	case k.protocol == protoICMP || k.protocol == protoICMPv6:
		if r.PortRangeMin != nil {
			k.portMin = *r.PortRangeMin
			k.portMax = ptr.Deref(r.PortRangeMax, -1)
		}
	}
	if k.remoteSG == "" {
		k.remoteIP = canonicalPrefix(ptr.Deref(r.RemoteIPPrefix, ""))
	}
	return k
}

func protocolNumber(p string) int {
	p = strings.ToLower(strings.TrimSpace(p))
	if p == "" || p == "any" {
		return -1
	}
	if n, ok := protocolNumbers[p]; ok {
		return n
	}
	if n, err := strconv.Atoi(p); err == nil && n >= 0 && n <= 255 {
		return n
	}
	// Unknown names are refused at admission; keep them distinct rather than guess.
	return 1000 + len(p)
}

func canonicalPrefix(s string) string {
	if s == "" {
		return ""
	}
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		addr, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return s
		}
		pfx = netip.PrefixFrom(addr, addr.BitLen())
	}
	pfx = pfx.Masked()
	if pfx.Bits() == 0 {
		return ""
	}
	return pfx.String()
}

// defaultRules are the rules Neutron adds to every new security group.
func defaultRules() []openstack.Rule {
	return []openstack.Rule{
		{Direction: v1alpha1.DirectionEgress, EtherType: v1alpha1.EtherTypeIPv4},
		{Direction: v1alpha1.DirectionEgress, EtherType: v1alpha1.EtherTypeIPv6},
	}
}

// desiredRules returns the rules a group whose Neutron ID is selfID should have, in Neutron's
// terms, and the indexes of the spec's rules left out because their remote group is not known
// yet. Such a rule is never created without its remote group: without one it would match any
// address. A rule whose remote group is its own group gets selfID.
func desiredRules(sg *v1alpha1.SecurityGroup, selfID string) (rules []openstack.Rule, unresolved []int) {
	p := sg.Spec.ForProvider
	rules = make([]openstack.Rule, 0, len(p.Rules)+2)
	if !p.DeleteDefaultRules {
		rules = append(rules, defaultRules()...)
	}
	for i, r := range p.Rules {
		remote := r.RemoteGroupID
		if r.RefersToItsOwnGroup(sg) {
			remote = nil
			if selfID != "" {
				remote = &selfID
			}
		}
		if r.HasRemoteGroup() && ptr.Deref(remote, "") == "" {
			unresolved = append(unresolved, i)
			continue
		}
		et := r.EtherType
		if et == "" {
			et = v1alpha1.EtherTypeIPv4
		}
		rules = append(rules, openstack.Rule{
			Direction:      r.Direction,
			EtherType:      et,
			Protocol:       r.Protocol,
			PortRangeMin:   r.PortRangeMin,
			PortRangeMax:   r.PortRangeMax,
			RemoteIPPrefix: r.RemoteIPPrefix,
			RemoteGroupID:  remote,
			Description:    r.Description,
		})
	}
	return rules, unresolved
}

// ruleDiff is what it takes to turn the observed rules into the desired ones.
type ruleDiff struct {
	create []openstack.Rule
	remove []openstack.Rule
}

func (d ruleDiff) empty() bool { return len(d.create) == 0 && len(d.remove) == 0 }

// diffRules compares rules by identity. Each observed rule can satisfy one desired rule;
// observed rules left over are removed, desired rules left over are created.
func diffRules(desired, observed []openstack.Rule) ruleDiff {
	want := map[ruleKey]openstack.Rule{}
	order := make([]ruleKey, 0, len(desired))
	for _, r := range desired {
		k := keyOf(r)
		if _, dup := want[k]; dup {
			continue
		}
		want[k] = r
		order = append(order, k)
	}
	var d ruleDiff
	have := map[ruleKey]bool{}
	for _, r := range observed {
		k := keyOf(r)
		if _, ok := want[k]; ok && !have[k] {
			have[k] = true
			continue
		}
		d.remove = append(d.remove, r)
	}
	for _, k := range order {
		if !have[k] {
			d.create = append(d.create, want[k])
		}
	}
	return d
}
