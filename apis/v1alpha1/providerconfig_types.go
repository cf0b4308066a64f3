package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	etcdv1alpha1 "github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
)

// CloudSettings are the parts of a ProviderConfig that do not depend on where the credentials
// come from.
type CloudSettings struct {
	// Cloud selects one entry when the credentials hold a whole clouds.yaml with several clouds
	// under `clouds:`. Not needed when they hold a single entry or a clouds.yaml with one cloud.
	// +optional
	Cloud string `json:"cloud,omitempty"`

	// Region overrides the region_name of the clouds.yaml entry.
	// +optional
	Region string `json:"region,omitempty"`

	// ObjectStorage says where the cloud's S3 API is; Contracts publish it with their keys.
	// +optional
	ObjectStorage *ObjectStorageSettings `json:"objectStorage,omitempty"`

	// EtcdMachines are the machines of the EtcdClusters that use this config and name none
	// (the EtcdDatabases of the configuration package name none): the platform team's
	// flavor, image and network, which app teams need not know. A cluster takes them when it
	// is made; a change here applies to clusters made after it.
	// +optional
	EtcdMachines *EtcdMachines `json:"etcdMachines,omitempty"`
}

// EtcdMachines say where the members of EtcdClusters run when they name no machines.
type EtcdMachines struct {
	// OpenStack servers in this config's project, made as an EtcdCluster's
	// spec.forProvider.machines.openstack says.
	OpenStack etcdv1alpha1.OpenStackMachines `json:"openstack"`
}

// ObjectStorageSettings locate the S3 API of the cloud.
type ObjectStorageSettings struct {
	// Endpoint of the S3 API, for example https://s3.example.com. Defaults to the scheme and
	// host of the object-store endpoint in the Keystone catalog (where Swift serves S3).
	// +kubebuilder:validation:Pattern=`^https?://[^/]+/?$`
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// Region the S3 API signs requests for (Swift's s3api "location"). Defaults to us-east-1.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Region string `json:"region,omitempty"`
}

// ProviderConfigSpec configures how the provider reaches an OpenStack cloud on behalf of the
// managed resources of one namespace.
type ProviderConfigSpec struct {
	CloudSettings `json:",inline"`

	// Credentials to authenticate to OpenStack: a clouds.yaml entry (auth_url, region_name,
	// project and domain, username/password or application_credential_id/secret, insecure,
	// cacert), or a whole clouds.yaml.
	Credentials NamespacedCredentials `json:"credentials"`
}

// NamespacedCredentials are the credentials a namespaced ProviderConfig may use: only a Secret
// in its own namespace, so that a tenant of one namespace can neither read another namespace's
// Secrets nor borrow the provider's own environment or filesystem.
// +kubebuilder:validation:XValidation:rule="self.source != 'Secret' || has(self.secretRef)",message="credentials.secretRef is required when source is Secret"
type NamespacedCredentials struct {
	// Source of the credentials.
	// +kubebuilder:validation:Enum=Secret
	Source xpv2.CredentialsSource `json:"source"`

	// SecretRef names the key of a Secret in the ProviderConfig's namespace that holds the
	// clouds.yaml entry.
	// +optional
	SecretRef *xpv2.LocalSecretKeySelector `json:"secretRef,omitempty"`
}

// ProviderConfigStatus is the observed state of a ProviderConfig.
type ProviderConfigStatus struct {
	xpv2.ProviderConfigStatus `json:",inline"`
}

// +kubebuilder:object:root=true

// A ProviderConfig configures how the provider reaches OpenStack for the managed resources in
// its namespace. It may only read credentials from a Secret in that namespace.
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="SECRET-NAME",type="string",JSONPath=".spec.credentials.secretRef.name",priority=1
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,provider,stackservices}
// +kubebuilder:subresource:status
type ProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProviderConfigSpec   `json:"spec"`
	Status ProviderConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ProviderConfigList contains a list of ProviderConfig.
type ProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderConfig `json:"items"`
}

// ClusterProviderConfigSpec configures how the provider reaches an OpenStack cloud on behalf of
// managed resources in any namespace.
type ClusterProviderConfigSpec struct {
	CloudSettings `json:",inline"`

	// Credentials to authenticate to OpenStack: a clouds.yaml entry or a whole clouds.yaml.
	Credentials ClusterCredentials `json:"credentials"`

	// Tenancy opens, to the namespaces it lists, what reaches beyond a namespace. Without it,
	// managed resources using this config stay within their namespace and the credentials'
	// own user: SecurityGroupAttachments cannot select the Nodes of the cluster the provider
	// runs in, and Contracts cannot name another Keystone user or project.
	// +optional
	Tenancy *Tenancy `json:"tenancy,omitempty"`
}

// Tenancy lists the namespaces allowed to reach beyond their own namespace through a
// ClusterProviderConfig. "*" stands for every namespace.
type Tenancy struct {
	// HostNodeNamespaces may have SecurityGroupAttachments whose nodeSelector picks the Nodes
	// of the cluster the provider runs in (and so open ports on the servers behind them).
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$`
	// +listType=set
	// +optional
	HostNodeNamespaces []string `json:"hostNodeNamespaces,omitempty"`

	// ServerNamespaces may have SecurityGroupAttachments that name servers by ID
	// (spec.forProvider.serverIDs) or through the Nodes of a workload cluster
	// (spec.forProvider.kubeconfigSecretRef, whose Nodes' provider IDs the tenant writes):
	// with the platform's credentials, any server of its project, whoever runs it.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$`
	// +listType=set
	// +optional
	ServerNamespaces []string `json:"serverNamespaces,omitempty"`

	// ContractOwnerNamespaces may have Contracts that set userID or projectID: keys for
	// another Keystone user or project than the credentials' own, which the credentials may
	// manage.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$`
	// +listType=set
	// +optional
	ContractOwnerNamespaces []string `json:"contractOwnerNamespaces,omitempty"`
}

// Allows reports whether namespaces lists ns (or "*").
func Allows(namespaces []string, ns string) bool {
	for _, n := range namespaces {
		if n == "*" || n == ns {
			return true
		}
	}
	return false
}

// ClusterCredentials are the credentials a ClusterProviderConfig may use.
// +kubebuilder:validation:XValidation:rule="self.source != 'Secret' || has(self.secretRef)",message="credentials.secretRef is required when source is Secret"
// +kubebuilder:validation:XValidation:rule="self.source != 'Environment' || has(self.env)",message="credentials.env is required when source is Environment"
// +kubebuilder:validation:XValidation:rule="self.source != 'Filesystem' || has(self.fs)",message="credentials.fs is required when source is Filesystem"
type ClusterCredentials struct {
	// Source of the credentials.
	// +kubebuilder:validation:Enum=Secret;Environment;Filesystem
	Source xpv2.CredentialsSource `json:"source"`

	xpv2.CommonCredentialSelectors `json:",inline"`
}

// +kubebuilder:object:root=true

// A ClusterProviderConfig configures how the provider reaches OpenStack for managed resources
// in any namespace.
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="SECRET-NAME",type="string",JSONPath=".spec.credentials.secretRef.name",priority=1
// +kubebuilder:resource:scope=Cluster,categories={crossplane,provider,stackservices}
// +kubebuilder:subresource:status
type ClusterProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterProviderConfigSpec `json:"spec"`
	Status ProviderConfigStatus      `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterProviderConfigList contains a list of ClusterProviderConfig.
type ClusterProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProviderConfig `json:"items"`
}
