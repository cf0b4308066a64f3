package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/common"
)

// Keys of a Contract's connection Secret. The first four are the provider's own names; the
// AWS_* and S3_* ones are what S3 SDKs and apps already read.
const (
	ConnectionAccessKeyID     = "accessKeyId"
	ConnectionSecretAccessKey = "secretAccessKey"
	ConnectionEndpoint        = "endpoint"
	ConnectionRegion          = "region"
	ConnectionAWSAccessKeyID  = "AWS_ACCESS_KEY_ID"
	ConnectionAWSSecretKey    = "AWS_SECRET_ACCESS_KEY" //nolint:gosec // The name of a key, not a credential.
	ConnectionS3Endpoint      = "S3_ENDPOINT"
	ConnectionAWSRegion       = "AWS_REGION"
	// ConnectionBucketName is in a Bucket's connection Secret, with the AWS_* and S3_* keys.
	ConnectionBucketName = "BUCKET_NAME"
)

// KeyRotation says when a Contract replaces its keys.
// +kubebuilder:validation:XValidation:rule="!has(self.period) || !has(self.gracePeriod) || !self.period.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || !self.gracePeriod.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || duration(self.gracePeriod) < duration(self.period)",message="rotation.gracePeriod must be shorter than rotation.period: the previous keys must be gone before the next rotation"
// +kubebuilder:validation:XValidation:rule="!has(self.period) || has(self.gracePeriod) || !self.period.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || duration(self.period) > duration('1h')",message="rotation.period must be longer than the default gracePeriod (1h), or set a shorter gracePeriod"
type KeyRotation struct {
	// Period after which new keys replace the current ones, for example 720h (30 days).
	// At least 1h, at most 87600h (10 years). Unset: keys are replaced only on request.
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || (duration(self) >= duration('1h') && duration(self) <= duration('87600h'))",message="rotation.period must be between 1h and 87600h: keys are not rotated more often than hourly"
	// +optional
	Period *common.Duration `json:"period,omitempty"`

	// GracePeriod the previous keys stay valid after the new ones are published, so that
	// whatever reads the Secret has time to pick them up. Defaults to 1h; at most 720h.
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || duration(self) <= duration('720h')",message="rotation.gracePeriod must be at most 720h"
	// +optional
	GracePeriod *common.Duration `json:"gracePeriod,omitempty"`

	// Request rotates the keys once each time it changes: set it to any new value (a date,
	// a ticket number).
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Request *string `json:"request,omitempty"`
}

// ContractParameters are the configurable fields of a Contract.
type ContractParameters struct {
	// UserID owns the keys. Defaults to the user of the ProviderConfig's credentials; another
	// user needs a ProviderConfig with the right to manage that user's credentials.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="userID is immutable: create a new Contract instead"
	// +kubebuilder:validation:MaxLength=64
	// +optional
	UserID *string `json:"userID,omitempty"`

	// ProjectID the keys act in. Defaults to the project of the ProviderConfig's credentials.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="projectID is immutable: create a new Contract instead"
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ProjectID *string `json:"projectID,omitempty"`

	// Rotation of the keys.
	// +optional
	Rotation *KeyRotation `json:"rotation,omitempty"`
}

// ContractObservation is the observed state of a Contract. It never holds the secret key.
type ContractObservation struct {
	AccessKeyID string `json:"accessKeyID,omitempty"`
	UserID      string `json:"userID,omitempty"`
	ProjectID   string `json:"projectID,omitempty"`
	Endpoint    string `json:"endpoint,omitempty"`
	Region      string `json:"region,omitempty"`

	// KeysCreatedAt is when the current keys were made.
	KeysCreatedAt *metav1.Time `json:"keysCreatedAt,omitempty"`
	// NextRotationAt is when the current keys will be replaced, with a rotation period.
	NextRotationAt *metav1.Time `json:"nextRotationAt,omitempty"`

	// PreviousAccessKeyID stays valid until PreviousKeysExpireAt, after a rotation.
	PreviousAccessKeyID  string       `json:"previousAccessKeyID,omitempty"`
	PreviousKeysExpireAt *metav1.Time `json:"previousKeysExpireAt,omitempty"`

	// LastRotationRequest is the spec.forProvider.rotation.request last acted on.
	LastRotationRequest string `json:"lastRotationRequest,omitempty"`
}

// A ContractSpec defines the desired state of a Contract.
type ContractSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	// +kubebuilder:default={}
	ForProvider ContractParameters `json:"forProvider"`
}

// A ContractStatus represents the observed state of a Contract.
type ContractStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 ContractObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A Contract is an object-storage account: S3 access keys (Keystone EC2 credentials, which
// Swift's S3 API and Ceph RGW accept), delivered only in the connection Secret
// (writeConnectionSecretToRef): AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, S3_ENDPOINT and
// AWS_REGION, and the same as accessKeyId, secretAccessKey, endpoint and region. Its external
// name is the current access key ID.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="ACCESS-KEY",type="string",JSONPath=".status.atProvider.accessKeyID"
// +kubebuilder:printcolumn:name="NEXT-ROTATION",type="string",JSONPath=".status.atProvider.nextRotationAt",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,stackservices}
type Contract struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ContractSpec   `json:"spec"`
	Status ContractStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ContractList contains a list of Contract.
type ContractList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Contract `json:"items"`
}
