package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// IdentityTagPrefix starts the tag that ties a Neutron security group to the SecurityGroup
// that made it: IdentityTagPrefix + the resource's UID.
const IdentityTagPrefix = "crossplane-uid:"

// Rule directions.
const (
	DirectionIngress = "ingress"
	DirectionEgress  = "egress"
)

// Rule ether types.
const (
	EtherTypeIPv4 = "IPv4"
	EtherTypeIPv6 = "IPv6"
)

// SecurityGroupRule is one rule of a security group. A rule is identified by its direction,
// ether type, protocol, port range and remote (prefix or group): two rules that agree on all of
// these are the same rule, whatever their descriptions say.
//
// The messages below are what `kubectl apply` prints when a rule is refused.
// +kubebuilder:validation:XValidation:rule="!has(self.remoteIPPrefix) || !(has(self.remoteGroupID) || has(self.remoteGroupRef) || has(self.remoteGroupSelector))",message="a rule may have a remoteIPPrefix or a remote group (remoteGroupID, remoteGroupRef, remoteGroupSelector), not both"
// +kubebuilder:validation:XValidation:rule="!has(self.remoteIPPrefix) || (isCIDR(self.remoteIPPrefix) ? cidr(self.remoteIPPrefix).ip().family() : ip(self.remoteIPPrefix).family()) == (self.etherType == 'IPv6' ? 6 : 4)",message="remoteIPPrefix must be of the rule's etherType family (an IPv4 CIDR for IPv4, an IPv6 CIDR for IPv6)"
// +kubebuilder:validation:XValidation:rule="!(has(self.portRangeMin) || has(self.portRangeMax)) || (has(self.protocol) && self.protocol in ['tcp', '6', 'udp', '17', 'sctp', '132', 'dccp', '33', 'udplite', '136', 'icmp', '1', 'ipv6-icmp', 'icmpv6', '58'])",message="portRangeMin and portRangeMax need a protocol with ports (tcp, udp, sctp, dccp, udplite) or an ICMP protocol (where they are the ICMP type and code)"
// +kubebuilder:validation:XValidation:rule="!(has(self.protocol) && self.protocol in ['tcp', '6', 'udp', '17', 'sctp', '132', 'dccp', '33', 'udplite', '136']) || has(self.portRangeMin) == has(self.portRangeMax)",message="set both portRangeMin and portRangeMax (equal for a single port), or neither for all ports"
// +kubebuilder:validation:XValidation:rule="!(has(self.protocol) && self.protocol in ['tcp', '6', 'udp', '17', 'sctp', '132', 'dccp', '33', 'udplite', '136'] && has(self.portRangeMin) && has(self.portRangeMax)) || (self.portRangeMin >= 1 && self.portRangeMin <= self.portRangeMax)",message="portRangeMin must be between 1 and portRangeMax"
// +kubebuilder:validation:XValidation:rule="!(has(self.protocol) && self.protocol in ['icmp', '1', 'ipv6-icmp', 'icmpv6', '58']) || ((!has(self.portRangeMin) || self.portRangeMin <= 255) && (!has(self.portRangeMax) || (has(self.portRangeMin) && self.portRangeMax <= 255)))",message="for ICMP, portRangeMin is the ICMP type and portRangeMax the code: both 0-255, and a code needs a type"
type SecurityGroupRule struct {
	// Direction of the traffic the rule allows.
	// +kubebuilder:validation:Enum=ingress;egress
	Direction string `json:"direction"`

	// EtherType is the IP family of the rule.
	// +kubebuilder:validation:Enum=IPv4;IPv6
	// +kubebuilder:default=IPv4
	// +optional
	EtherType string `json:"etherType,omitempty"`

	// Protocol is an IP protocol name (tcp, udp, icmp, ipv6-icmp, sctp, ...) or number (0-255).
	// Omit it to allow every protocol.
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="self in ['ah', 'dccp', 'egp', 'esp', 'gre', 'hopopt', 'icmp', 'igmp', 'ipip', 'ipv6-encap', 'ipv6-frag', 'ipv6-icmp', 'icmpv6', 'ipv6-nonxt', 'ipv6-opts', 'ipv6-route', 'ospf', 'pgm', 'rsvp', 'sctp', 'tcp', 'udp', 'udplite', 'vrrp'] || (self.matches('^[0-9]{1,3}$') && int(self) <= 255)",message="protocol must be a protocol name (tcp, udp, icmp, ipv6-icmp, sctp, gre, esp, ...) or a number from 0 to 255"
	// +optional
	Protocol *string `json:"protocol,omitempty"`

	// PortRangeMin is the first port of the range, or the ICMP type for ICMP rules.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	PortRangeMin *int32 `json:"portRangeMin,omitempty"`

	// PortRangeMax is the last port of the range, or the ICMP code for ICMP rules.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	PortRangeMax *int32 `json:"portRangeMax,omitempty"`

	// RemoteIPPrefix is the CIDR (or single address) the traffic comes from (ingress) or goes to
	// (egress). Omit it, and the remote group, to match any address.
	// +kubebuilder:validation:MaxLength=49
	// +kubebuilder:validation:XValidation:rule="isCIDR(self) || isIP(self)",message="remoteIPPrefix must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32, or a single address"
	// +optional
	RemoteIPPrefix *string `json:"remoteIPPrefix,omitempty"`

	// RemoteGroupID is the ID of a security group whose members the rule matches.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	RemoteGroupID *string `json:"remoteGroupID,omitempty"`

	// RemoteGroupRef references a SecurityGroup in this namespace to fill in remoteGroupID;
	// it may name the rule's own SecurityGroup. Until it resolves the rule is not created
	// (never as "any address") and the group is not Ready.
	// +optional
	RemoteGroupRef *xpv2.Reference `json:"remoteGroupRef,omitempty"`

	// RemoteGroupSelector selects a SecurityGroup in this namespace to fill in remoteGroupID.
	// +optional
	RemoteGroupSelector *xpv2.Selector `json:"remoteGroupSelector,omitempty"`

	// Description of the rule. Neutron cannot change a rule, so a description is written when
	// the rule is created; changing only the description does not replace the rule.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Description *string `json:"description,omitempty"`
}

// SecurityGroupParameters are the configurable fields of a SecurityGroup.
type SecurityGroupParameters struct {
	// Name of the security group in Neutron; defaults to the managed resource's name. Neutron
	// does not keep names unique, so the provider never looks a group up by its name.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Name *string `json:"name,omitempty"`

	// Description of the security group.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Description *string `json:"description,omitempty"`

	// Stateful groups track connections, so replies are allowed without a rule of their own.
	// Defaults to true, as in Neutron. Neutron refuses to change it while ports use the group.
	// +optional
	Stateful *bool `json:"stateful,omitempty"`

	// Tags to set on the security group. The provider adds one tag of its own
	// (crossplane-uid:<uid>) that ties the group to this managed resource.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MaxLength=60
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:Pattern=`^[^,]+$`
	// +listType=set
	// +optional
	Tags []string `json:"tags,omitempty"`

	// DeleteDefaultRules removes the two rules Neutron adds to every new group (all egress
	// traffic, IPv4 and IPv6), so that only the rules listed here remain. By default they are
	// kept, and restored if someone removes them.
	// +optional
	DeleteDefaultRules bool `json:"deleteDefaultRules,omitempty"`

	// Rules of the security group. Rules in Neutron that are not listed here (nor are default
	// rules kept by deleteDefaultRules=false) are removed.
	// +kubebuilder:validation:MaxItems=200
	// +listType=atomic
	// +optional
	Rules []SecurityGroupRule `json:"rules,omitempty"`
}

// SecurityGroupRuleObservation is a rule as Neutron reports it.
type SecurityGroupRuleObservation struct {
	ID             string  `json:"id"`
	Direction      string  `json:"direction"`
	EtherType      string  `json:"etherType"`
	Protocol       *string `json:"protocol,omitempty"`
	PortRangeMin   *int32  `json:"portRangeMin,omitempty"`
	PortRangeMax   *int32  `json:"portRangeMax,omitempty"`
	RemoteIPPrefix *string `json:"remoteIPPrefix,omitempty"`
	RemoteGroupID  *string `json:"remoteGroupID,omitempty"`
	Description    *string `json:"description,omitempty"`
}

// SecurityGroupObservation is the observed state of a security group in Neutron.
type SecurityGroupObservation struct {
	// ID is the Neutron UUID of the group (also its external name).
	ID string `json:"id,omitempty"`

	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Stateful    *bool    `json:"stateful,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	ProjectID   string   `json:"projectID,omitempty"`

	// RevisionNumber increases with every change Neutron makes to the group or its rules.
	RevisionNumber int64 `json:"revisionNumber,omitempty"`

	// Rules are the rules in Neutron, with their IDs.
	Rules []SecurityGroupRuleObservation `json:"rules,omitempty"`

	CreatedAt *metav1.Time `json:"createdAt,omitempty"`
	UpdatedAt *metav1.Time `json:"updatedAt,omitempty"`
}

// A SecurityGroupSpec defines the desired state of a SecurityGroup.
type SecurityGroupSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              SecurityGroupParameters `json:"forProvider"`
}

// A SecurityGroupStatus represents the observed state of a SecurityGroup.
type SecurityGroupStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 SecurityGroupObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A SecurityGroup is a Neutron security group with its rules. Its external name is the group's
// UUID, set when the provider creates it; set it yourself to import an existing group.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,stackservices},shortName=sg
type SecurityGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SecurityGroupSpec   `json:"spec"`
	Status SecurityGroupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SecurityGroupList contains a list of SecurityGroup.
type SecurityGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecurityGroup `json:"items"`
}
