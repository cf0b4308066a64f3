package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// Attachment states of one server.
const (
	// ServerAttached: every port of the server carries the security group.
	ServerAttached = "Attached"
	// ServerPending: the group still has to be added to (or removed from) some ports.
	ServerPending = "Pending"
	// ServerError: the group cannot be attached; the reason says why.
	ServerError = "Error"
)

// SecurityGroupAttachmentParameters are the configurable fields of a SecurityGroupAttachment.
// +kubebuilder:validation:XValidation:rule="has(self.nodeSelector) || (has(self.serverIDs) && size(self.serverIDs) > 0)",message="set nodeSelector, serverIDs or both: an attachment needs targets"
// +kubebuilder:validation:XValidation:rule="has(self.securityGroupID) || has(self.securityGroupRef) || has(self.securityGroupSelector)",message="set securityGroupID, securityGroupRef or securityGroupSelector"
type SecurityGroupAttachmentParameters struct {
	// SecurityGroupID is the Neutron UUID of the security group to attach.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	SecurityGroupID *string `json:"securityGroupID,omitempty"`

	// SecurityGroupRef references a SecurityGroup in this namespace to fill in
	// securityGroupID.
	// +optional
	SecurityGroupRef *xpv2.Reference `json:"securityGroupRef,omitempty"`

	// SecurityGroupSelector selects a SecurityGroup in this namespace to fill in
	// securityGroupID.
	// +optional
	SecurityGroupSelector *xpv2.Selector `json:"securityGroupSelector,omitempty"`

	// NodeSelector picks the Kubernetes nodes whose servers get the group. A node is mapped to
	// its server by spec.providerID (openstack:///<uuid>), else by status.nodeInfo.systemUUID.
	// An empty selector ({}) picks every node.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// ServerIDs are servers (Nova instance UUIDs) that get the group whatever the nodes are.
	// +kubebuilder:validation:MaxItems=500
	// +kubebuilder:validation:items:Pattern=`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`
	// +listType=set
	// +optional
	ServerIDs []string `json:"serverIDs,omitempty"`

	// KubeconfigSecretRef names a kubeconfig, in a Secret in this namespace, of the cluster
	// whose nodes nodeSelector picks: a workload cluster running on the OpenStack cloud. By
	// default the nodes are those of the cluster the provider runs in.
	// +optional
	KubeconfigSecretRef *xpv2.LocalSecretKeySelector `json:"kubeconfigSecretRef,omitempty"`
}

// AttachedServer is one server the group is (or was) attached to.
type AttachedServer struct {
	// ServerID is the Nova instance UUID: the device_id of its ports.
	ServerID string `json:"serverID"`
	// NodeName is the Kubernetes node the server runs, when a node selected it.
	NodeName string `json:"nodeName,omitempty"`
	// PortIDs are the server's Neutron ports.
	PortIDs []string `json:"portIDs,omitempty"`
	// State is Attached, Pending or Error.
	State string `json:"state"`
	// Reason explains a Pending or Error state.
	Reason string `json:"reason,omitempty"`
}

// UnmatchedNode is a selected node that maps to no server.
type UnmatchedNode struct {
	NodeName string `json:"nodeName"`
	Reason   string `json:"reason"`
}

// SecurityGroupAttachmentObservation is the observed state of an attachment.
type SecurityGroupAttachmentObservation struct {
	// SecurityGroupID is the group the servers below carry.
	SecurityGroupID string `json:"securityGroupID,omitempty"`
	// Servers the group is attached to, or being attached to or detached from. The provider
	// also remembers here where it attached the group, so it can detach it from servers that no
	// longer match (or whose node is gone), and from all of them on delete.
	Servers []AttachedServer `json:"servers,omitempty"`
	// UnmatchedNodes are selected nodes that map to no server; the group is not attached for
	// them.
	UnmatchedNodes []UnmatchedNode `json:"unmatchedNodes,omitempty"`
}

// A SecurityGroupAttachmentSpec defines the desired state of a SecurityGroupAttachment.
type SecurityGroupAttachmentSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              SecurityGroupAttachmentParameters `json:"forProvider"`
}

// A SecurityGroupAttachmentStatus represents the observed state of a SecurityGroupAttachment.
type SecurityGroupAttachmentStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 SecurityGroupAttachmentObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A SecurityGroupAttachment attaches a security group to the servers behind the Kubernetes
// nodes a label selector picks (and to explicit servers), at the port level and in append
// mode: other security groups on the same ports are kept. It detaches the group from servers
// that stop matching, re-attaches it where someone removed it, and detaches it from every
// server it recorded when deleted.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="SECURITY-GROUP",type="string",JSONPath=".status.atProvider.securityGroupID"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,stackservices},shortName=sga
type SecurityGroupAttachment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SecurityGroupAttachmentSpec   `json:"spec"`
	Status SecurityGroupAttachmentStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SecurityGroupAttachmentList contains a list of SecurityGroupAttachment.
type SecurityGroupAttachmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecurityGroupAttachment `json:"items"`
}
