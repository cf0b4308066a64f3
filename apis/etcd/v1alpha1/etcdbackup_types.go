package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// EtcdBackupParameters are the configurable fields of an EtcdBackup.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an EtcdBackup cannot change: it is one snapshot, taken once; make another"
type EtcdBackupParameters struct {
	// ClusterRef names the EtcdCluster, in this namespace, to take a snapshot of.
	ClusterRef LocalObjectReference `json:"clusterRef"`

	// Destination is where the backup goes; the prefix defaults to <namespace>/<cluster>/, as
	// scheduled backups'. The backup keeps it: deleting the backup after its cluster (and
	// after the cluster's own backup settings) still finds the objects.
	Destination BackupDestination `json:"destination"`

	// Encryption encrypts the snapshot to age recipients as it streams. Unset, the backup
	// is encrypted as the cluster's scheduled backups are (its backup.encryption, when the
	// backup is taken): an on-demand backup of a cluster whose backups are encrypted is
	// never stored in the clear.
	// +optional
	Encryption *Encryption `json:"encryption,omitempty"`
}

// EtcdBackupObservation is the backup as stored.
type EtcdBackupObservation struct {
	// Bucket and Key of the snapshot object; its metadata is at Key plus ".json".
	Bucket string `json:"bucket,omitempty"`
	Key    string `json:"key,omitempty"`
	// Size and SHA256 of the snapshot object.
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Revision the snapshot holds at least.
	Revision int64 `json:"revision,omitempty"`
	// ClusterID of the cluster, in hex, and the member the snapshot was taken from.
	ClusterID string `json:"clusterID,omitempty"`
	Member    string `json:"member,omitempty"`
	// EtcdVersion the cluster ran.
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// Time the snapshot began.
	Time *metav1.Time `json:"time,omitempty"`
	// Encrypted is true when the snapshot is stored encrypted (age); restoring it needs an
	// identity of one of its recipients.
	Encrypted bool `json:"encrypted,omitempty"`
}

// An EtcdBackupSpec defines the desired state of an EtcdBackup.
type EtcdBackupSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              EtcdBackupParameters `json:"forProvider"`
}

// An EtcdBackupStatus represents the observed state of an EtcdBackup.
type EtcdBackupStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 EtcdBackupObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// An EtcdBackup is one snapshot of an EtcdCluster, taken on demand into an S3 bucket: the
// snapshot object and its metadata, as scheduled backups store them. It is Ready once both
// are stored with the checksum it recorded. Deleting it deletes them, unless its management
// policies leave out Delete. Its external name is the snapshot's key. The scheduled backups'
// retention never deletes it.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="CLUSTER",type="string",JSONPath=".spec.forProvider.clusterRef.name"
// +kubebuilder:printcolumn:name="SIZE",type="integer",JSONPath=".status.atProvider.size"
// +kubebuilder:printcolumn:name="REVISION",type="integer",JSONPath=".status.atProvider.revision"
// +kubebuilder:printcolumn:name="KEY",type="string",JSONPath=".status.atProvider.key",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,stackservices}
type EtcdBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdBackupSpec   `json:"spec"`
	Status EtcdBackupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EtcdBackupList contains a list of EtcdBackup.
type EtcdBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackup `json:"items"`
}
