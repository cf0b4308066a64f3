//go:build integration

package integration

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// TestSecurityGroupAdmission checks that the API server itself refuses bad rules, with a
// message a person can act on.
func TestSecurityGroupAdmission(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cases := map[string]struct {
		rule v1alpha1.SecurityGroupRule
		want string
	}{
		"MinAboveMax": {
			rule: rule("ingress", "IPv4", "tcp", 443, 80, ""),
			want: "portRangeMin must be between 1 and portRangeMax",
		},
		"PortAbove65535": {
			rule: rule("ingress", "IPv4", "tcp", 1, 70000, ""),
			want: "should be less than or equal to 65535",
		},
		"OnlyOneEnd": {
			rule: rule("ingress", "IPv4", "udp", 53, -1, ""),
			want: "set both portRangeMin and portRangeMax",
		},
		"IPv6PrefixOnIPv4Rule": {
			rule: rule("ingress", "IPv4", "tcp", 22, 22, "2001:db8::/32"),
			want: "remoteIPPrefix must be of the rule's etherType family",
		},
		"IPv4PrefixOnIPv6Rule": {
			rule: rule("ingress", "IPv6", "", -1, -1, "10.0.0.0/8"),
			want: "remoteIPPrefix must be of the rule's etherType family",
		},
		"NotACIDR": {
			rule: rule("ingress", "IPv4", "tcp", 22, 22, "10.0.0.0/33"),
			want: "remoteIPPrefix must be a CIDR",
		},
		"PrefixAndGroup": {
			rule: func() v1alpha1.SecurityGroupRule {
				r := rule("ingress", "IPv4", "tcp", 22, 22, "10.0.0.0/8")
				r.RemoteGroupID = ptr.To("9b7d3e52-0d1a-4c55-8f5e-6f1d2b3c4d5e")
				return r
			}(),
			want: "a rule may have a remoteIPPrefix or a remote group",
		},
		"UnknownProtocol": {
			rule: rule("ingress", "IPv4", "tpc", -1, -1, ""),
			want: "protocol must be a protocol name",
		},
		"ProtocolNumberTooLarge": {
			rule: rule("ingress", "IPv4", "300", -1, -1, ""),
			want: "protocol must be a protocol name",
		},
		"PortsWithoutProtocol": {
			rule: rule("ingress", "IPv4", "", 80, 80, ""),
			want: "need a protocol with ports",
		},
		"PortsOnGRE": {
			rule: rule("ingress", "IPv4", "gre", 80, 80, ""),
			want: "need a protocol with ports",
		},
		"ICMPCodeWithoutType": {
			rule: rule("ingress", "IPv4", "icmp", -1, 0, ""),
			want: "a code needs a type",
		},
		"ICMPTypeAbove255": {
			rule: rule("ingress", "IPv4", "icmp", 300, -1, ""),
			want: "for ICMP, portRangeMin is the ICMP type",
		},
		"BadDirection": {
			rule: rule("inbound", "IPv4", "tcp", 22, 22, ""),
			want: `Unsupported value: "inbound"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cr := newSecurityGroup(ns, strings.ToLower(name), v1alpha1.SecurityGroupParameters{Rules: []v1alpha1.SecurityGroupRule{tc.rule}})
			err := env.Kube.Create(harness.Ctx(t), cr)
			if err == nil {
				t.Fatalf("the API server accepted a bad rule; want it refused with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("refusal message:\n  %s\nwant it to contain %q", err, tc.want)
			}
		})
	}

	// And good rules of every shape are accepted.
	good := []v1alpha1.SecurityGroupRule{
		rule("ingress", "IPv4", "tcp", 1, 65535, "10.1.2.3/8"),
		rule("ingress", "IPv4", "icmp", 0, 0, "192.0.2.1"),
		rule("egress", "IPv6", "58", 128, -1, "2001:db8::/32"),
		rule("ingress", "IPv4", "vrrp", -1, -1, ""),
		rule("ingress", "IPv4", "0", -1, -1, ""),
	}
	cr := newSecurityGroup(ns, "good", v1alpha1.SecurityGroupParameters{Rules: good})
	cr.Annotations = map[string]string{"crossplane.io/paused": "true"}
	if err := env.Kube.Create(harness.Ctx(t), cr); err != nil {
		t.Fatalf("good rules refused: %v", err)
	}
}
