package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reference"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// A Grantee of a bucket ACL grant.
type Grantee struct {
	// Type of the grantee: a canonical user ID, an e-mail address or a group URI.
	// +kubebuilder:validation:Enum=id;emailAddress;uri
	Type string `json:"type"`

	// Value is the canonical ID, the address or the URI (for example
	// http://acs.amazonaws.com/groups/global/AllUsers).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Value string `json:"value"`
}

// BucketParameters are the configurable fields of a Bucket.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.bucketName) || has(self.bucketName)",message="bucketName is immutable: it cannot be removed once set"
// +kubebuilder:validation:XValidation:rule="!has(self.cannedACL) || !(has(self.grantRead) || has(self.grantWrite) || has(self.grantReadACP) || has(self.grantWriteACP) || has(self.grantFullControl))",message="use cannedACL or grants (grantRead, grantWrite, grantReadACP, grantWriteACP, grantFullControl), not both"
// +kubebuilder:validation:XValidation:rule="!(has(self.contractName) || has(self.contractRef) || has(self.contractSelector)) || !has(self.credentialsSecretRef)",message="take credentials from a Contract (contractName, contractRef, contractSelector) or from credentialsSecretRef, not both"
// +kubebuilder:validation:XValidation:rule="has(self.contractName) || has(self.contractRef) || has(self.contractSelector) || has(self.credentialsSecretRef)",message="a bucket needs S3 credentials: set contractRef (a Contract in this namespace) or credentialsSecretRef"
type BucketParameters struct {
	// BucketName is the name of the bucket in S3; defaults to the managed resource's name.
	// It cannot change: a bucket cannot be renamed.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="bucketName is immutable: a bucket cannot be renamed"
	// +kubebuilder:validation:XValidation:rule="!self.contains('..') && !self.matches('^[0-9]+\\\\.[0-9]+\\\\.[0-9]+\\\\.[0-9]+$') && !self.startsWith('xn--') && !self.endsWith('-s3alias')",message="bucketName breaks S3 naming rules: no '..', not an IP address, no 'xn--' prefix or '-s3alias' suffix"
	// +optional
	BucketName *string `json:"bucketName,omitempty"`

	// ContractName is the Contract (in this namespace) whose keys the provider uses for the
	// bucket, and which owns it.
	// +optional
	ContractName *string `json:"contractName,omitempty"`

	// ContractRef references the Contract, in this namespace, to fill in contractName.
	// +optional
	ContractRef *xpv2.Reference `json:"contractRef,omitempty"`

	// ContractSelector selects the Contract, in this namespace, to fill in contractName.
	// +optional
	ContractSelector *xpv2.Selector `json:"contractSelector,omitempty"`

	// CredentialsSecretRef names a Secret in this namespace with the keys a Contract's
	// connection Secret has (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, S3_ENDPOINT,
	// AWS_REGION), for buckets of accounts the provider does not manage.
	// +optional
	CredentialsSecretRef *xpv2.LocalSecretReference `json:"credentialsSecretRef,omitempty"`

	// Region the S3 API signs requests for; defaults to the region in the credentials.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Region *string `json:"region,omitempty"`

	// CannedACL of the bucket. Leave it and the grants unset to leave the ACL alone.
	// +kubebuilder:validation:Enum=private;public-read;public-read-write;authenticated-read
	// +optional
	CannedACL *string `json:"cannedACL,omitempty"`

	// GrantRead lets the grantees list the bucket's objects. With grants, the owner always
	// keeps FULL_CONTROL.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	GrantRead []Grantee `json:"grantRead,omitempty"`

	// GrantWrite lets the grantees create, overwrite and delete objects.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	GrantWrite []Grantee `json:"grantWrite,omitempty"`

	// GrantReadACP lets the grantees read the bucket ACL.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	GrantReadACP []Grantee `json:"grantReadACP,omitempty"`

	// GrantWriteACP lets the grantees change the bucket ACL.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	GrantWriteACP []Grantee `json:"grantWriteACP,omitempty"`

	// GrantFullControl gives the grantees every permission on the bucket.
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	GrantFullControl []Grantee `json:"grantFullControl,omitempty"`

	// Policy is the bucket policy document, written as YAML or JSON. Compared by meaning, not
	// by bytes. Leave it unset to leave the policy alone.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Policy *apiextensionsv1.JSON `json:"policy,omitempty"`

	// Versioning of the bucket's objects. Once enabled, S3 can only suspend it.
	// +kubebuilder:validation:Enum=Enabled;Suspended
	// +optional
	Versioning *string `json:"versioning,omitempty"`

	// AdoptExisting manages a bucket of this name that already exists in the account of the
	// credentials (one this resource did not create: a retained bucket, say), with every
	// object it holds; an Event says it was adopted. Without it such a bucket is left alone and
	// the Bucket reports it. A bucket of another account is never adopted.
	// +optional
	AdoptExisting bool `json:"adoptExisting,omitempty"`

	// ForceDestroy deletes every object (and version) when the bucket is deleted. Without it
	// a bucket that holds objects is never deleted: the condition says it is not empty.
	// +optional
	ForceDestroy bool `json:"forceDestroy,omitempty"`
}

// ObservedGrant is a grant of the bucket's ACL as the server reports it.
type ObservedGrant struct {
	Permission  string `json:"permission"`
	Type        string `json:"type"`
	Value       string `json:"value"`
	DisplayName string `json:"displayName,omitempty"`
}

// BucketObservation is the observed state of a bucket.
type BucketObservation struct {
	Endpoint         string          `json:"endpoint,omitempty"`
	Region           string          `json:"region,omitempty"`
	OwnerID          string          `json:"ownerID,omitempty"`
	OwnerDisplayName string          `json:"ownerDisplayName,omitempty"`
	Grants           []ObservedGrant `json:"grants,omitempty"`
	// Policy is the bucket policy in canonical form ("" when there is none).
	Policy string `json:"policy,omitempty"`
	// PolicySupported is false on servers without bucket policies (Swift).
	PolicySupported *bool  `json:"policySupported,omitempty"`
	Versioning      string `json:"versioning,omitempty"`
}

// A BucketSpec defines the desired state of a Bucket.
type BucketSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              BucketParameters `json:"forProvider"`
}

// A BucketStatus represents the observed state of a Bucket.
type BucketStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 BucketObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A Bucket is an S3 bucket whose ACL, policy and versioning the provider keeps as declared.
// Its external name is the bucket name. Its connection Secret holds what an app needs to use
// it: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, S3_ENDPOINT, AWS_REGION and BUCKET_NAME.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,stackservices}
type Bucket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BucketSpec   `json:"spec"`
	Status BucketStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BucketList contains a list of Bucket.
type BucketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bucket `json:"items"`
}

// ContractName extracts a Contract's name, which is how a Bucket names its Contract.
func ContractName() reference.ExtractValueFn {
	return func(mg resource.Managed) string { return mg.GetName() }
}
