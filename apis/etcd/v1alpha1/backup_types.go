package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A LocalObjectReference names an object in the namespace of the resource that holds it.
type LocalObjectReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// A BackupDestination is where backups go: a Bucket of this namespace, or a bucket by name
// with credentials.
// +kubebuilder:validation:XValidation:rule="has(self.bucketRef) != has(self.bucketName)",message="name the bucket with bucketRef (a Bucket in this namespace) or bucketName, exactly one"
// +kubebuilder:validation:XValidation:rule="!has(self.bucketRef) || !(has(self.contractRef) || has(self.credentialsSecretRef))",message="with bucketRef the Bucket's own credentials are used: drop contractRef and credentialsSecretRef"
// +kubebuilder:validation:XValidation:rule="!has(self.bucketName) || (has(self.contractRef) != has(self.credentialsSecretRef))",message="with bucketName, take S3 credentials from contractRef (a Contract in this namespace) or credentialsSecretRef, exactly one"
type BackupDestination struct {
	// BucketRef names a Bucket in this namespace: backups go to its bucket, with its
	// credentials.
	// +optional
	BucketRef *LocalObjectReference `json:"bucketRef,omitempty"`

	// BucketName is the name of an S3 bucket that exists.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	// +optional
	BucketName *string `json:"bucketName,omitempty"`

	// ContractRef names a Contract in this namespace whose keys write to the bucket.
	// +optional
	ContractRef *LocalObjectReference `json:"contractRef,omitempty"`

	// CredentialsSecretRef names a Secret in this namespace with the keys a Contract's
	// connection Secret has (access_key_id or aws_access_key_id, secret_access_key or
	// aws_secret_access_key, endpoint or s3_endpoint, optionally region).
	// +optional
	CredentialsSecretRef *LocalObjectReference `json:"credentialsSecretRef,omitempty"`

	// Region the S3 API signs requests for; defaults to the region in the credentials.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Region *string `json:"region,omitempty"`

	// Prefix starts the key of every object of this cluster's backups. Defaults to
	// <namespace>/<name>/. It ends with a slash.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!_.*'()-][A-Za-z0-9!_.*'()/-]*/$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('//') && !self.split('/').exists(s, s == '.' || s == '..')",message="prefix must not hold empty, '.' or '..' segments"
	// +optional
	Prefix *string `json:"prefix,omitempty"`
}

// Retention says which backups are kept, with the "forget" semantics of backup tools: the
// newest keepLast, plus the newest backup of each of the keepHourly newest hours (keepDaily
// days, keepWeekly ISO weeks, all in UTC) that have one. A backup any rule keeps is kept, and
// the newest backup is never deleted.
type Retention struct {
	// KeepLast is how many of the newest backups are kept. Defaults to 7.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=7
	// +optional
	KeepLast *int32 `json:"keepLast,omitempty"`
	// KeepHourly keeps the newest backup of each of this many hours.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=48
	// +optional
	KeepHourly *int32 `json:"keepHourly,omitempty"`
	// KeepDaily keeps the newest backup of each of this many days.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31
	// +optional
	KeepDaily *int32 `json:"keepDaily,omitempty"`
	// KeepWeekly keeps the newest backup of each of this many weeks.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=52
	// +optional
	KeepWeekly *int32 `json:"keepWeekly,omitempty"`
}

// Backup takes snapshots of the cluster on a schedule into an S3 bucket.
type Backup struct {
	// Schedule is when backups are taken, in UTC: a cron expression of five fields
	// (minute hour day-of-month month day-of-week, "0 */6 * * *"), a descriptor (@hourly,
	// @daily, @weekly), or @every with a duration of at least 5s ("@every 30m").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.contains('TZ=')",message="schedules are in UTC: remove the CRON_TZ or TZ prefix"
	Schedule string `json:"schedule"`

	// Destination is the bucket and key prefix backups go to.
	Destination BackupDestination `json:"destination"`

	// Retention says which backups are kept; the others are deleted after each backup.
	// Defaults to the newest 7.
	// +kubebuilder:default={keepLast: 7}
	// +optional
	Retention *Retention `json:"retention,omitempty"`

	// Encryption encrypts backups, as they stream, to age recipients.
	// +optional
	Encryption *Encryption `json:"encryption,omitempty"`

	// Verify reads each backup back after it is stored: its size and checksum and, unless it
	// is encrypted, the database itself (opened as etcdutl snapshot status does, which needs
	// temporary space as large as the database on the provider). A backup that does not
	// verify is deleted and reported as a failed backup.
	// +optional
	Verify bool `json:"verify,omitempty"`

	// BeforeChanges takes a backup before an upgrade, a certificate roll or a scale-in
	// starts, and holds the change until it has succeeded. Defaults to true.
	// +kubebuilder:default=true
	// +optional
	BeforeChanges *bool `json:"beforeChanges,omitempty"`
}

// Encryption of backups with age (https://age-encryption.org): each snapshot is encrypted
// while it streams, and only the identities of the recipients can read it. The provider
// never needs an identity to take backups; a restore reads one from a Secret.
type Encryption struct {
	// Recipients are age X25519 public keys (age1...); the identity of any one of them
	// decrypts the backups.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^age1[02-9ac-hj-np-z]{58}$`
	// +listType=set
	Recipients []string `json:"recipients"`
}

// A SecretKeyReference names a key of a Secret in the namespace of the resource that holds it.
type SecretKeyReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key in the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// Decryption says how to read an encrypted backup.
type Decryption struct {
	// IdentitySecretRef names the Secret key, in this namespace, holding an age identity
	// (AGE-SECRET-KEY-1...) of one of the backup's recipients.
	IdentitySecretRef SecretKeyReference `json:"identitySecretRef"`
}

// Backup states.
const (
	// BackupHealthy: the last backup succeeded.
	BackupHealthy = "Healthy"
	// BackupFailing: the last backup failed; the reason says why. It is tried again after
	// 30s (doubling up to 30m) or at the next scheduled time, whichever comes first.
	BackupFailing = "Failing"
	// BackupRunning: the first backup is being taken.
	BackupRunning = "Running"
)

// A StoredBackup is a backup the retention policy keeps.
type StoredBackup struct {
	// Key of the snapshot object; its metadata is at the same key plus ".json".
	Key string `json:"key"`
	// Time the snapshot began.
	Time metav1.Time `json:"time"`
	// Revision the snapshot holds at least.
	Revision int64 `json:"revision"`
	// Size of the snapshot object in bytes.
	Size int64 `json:"size"`
	// SHA256 of the snapshot object.
	SHA256 string `json:"sha256"`
	// Verified says the backup was read back and checked (spec.forProvider.backup.verify).
	Verified bool `json:"verified,omitempty"`
}

// BackupObservation is the state of a cluster's backups.
type BackupObservation struct {
	// State is Healthy, Failing or Running.
	State string `json:"state,omitempty"`
	// Reason the last backup failed.
	Reason string `json:"reason,omitempty"`
	// LastAttemptTime is when the last backup began.
	LastAttemptTime *metav1.Time `json:"lastAttemptTime,omitempty"`
	// LastSuccessTime is when the last backup that succeeded began.
	LastSuccessTime *metav1.Time `json:"lastSuccessTime,omitempty"`
	// LastFailureTime is when the last backup that failed began.
	LastFailureTime *metav1.Time `json:"lastFailureTime,omitempty"`
	// NextScheduledTime is when the next backup is due.
	NextScheduledTime *metav1.Time `json:"nextScheduledTime,omitempty"`
	// ChangeWaitingSince is when a change (an upgrade, a certificate roll, a scale-in) began
	// waiting for the backup beforeChanges asks for; cleared once the cluster is at rest.
	ChangeWaitingSince *metav1.Time `json:"changeWaitingSince,omitempty"`
	// ConsecutiveFailures counts the backups that failed since the last success.
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`
	// Bucket and Prefix are where the backups are.
	Bucket string `json:"bucket,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	// Stored are the backups the retention policy keeps, newest first.
	Stored []StoredBackup `json:"stored,omitempty"`
}

// DefaultBumpRevision is how far a restore moves the revision on by default: far beyond what
// the old cluster can have written since its last backup.
const DefaultBumpRevision = 1000000000

// Restore makes a new cluster from a backup. Every member is restored from the same snapshot
// before any starts; the cluster gets a new cluster ID, and its revision is moved on
// (bumpRevision) and marked compacted, so that clients that watched the old cluster see a
// compaction rather than revisions going backwards.
// +kubebuilder:validation:XValidation:rule="[has(self.backupRef), has(self.key), has(self.latestBefore)].filter(x, x).size() == 1",message="restore names one backup: backupRef (an EtcdBackup), key, or latestBefore to take the newest backup before a time"
// +kubebuilder:validation:XValidation:rule="has(self.backupRef) != has(self.source)",message="restore.source names the bucket of key or latestBefore; an EtcdBackup (backupRef) knows its own"
// +kubebuilder:validation:XValidation:rule="!has(self.latestBefore) || (has(self.source) && has(self.source.prefix))",message="restore.latestBefore needs source.prefix: the prefix the backups to choose from were written under"
type Restore struct {
	// BackupRef names an EtcdBackup, in this namespace, to restore.
	// +optional
	BackupRef *LocalObjectReference `json:"backupRef,omitempty"`

	// Source is the bucket the backup is in, and its credentials, as in backup.destination.
	// +optional
	Source *BackupDestination `json:"source,omitempty"`

	// Key of the snapshot object to restore (its metadata is at the same key plus ".json").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Key *string `json:"key,omitempty"`

	// LatestBefore restores the newest backup under source.prefix that was taken before
	// this time.
	// +optional
	LatestBefore *metav1.Time `json:"latestBefore,omitempty"`

	// Decryption reads an encrypted backup. Members get the identity with the backup's URL,
	// for the restore only.
	// +optional
	Decryption *Decryption `json:"decryption,omitempty"`

	// BumpRevision is added to the backup's revision. Defaults to 1000000000.
	// +kubebuilder:validation:Minimum=1
	// +optional
	BumpRevision *int64 `json:"bumpRevision,omitempty"`
}

// A RestoredBackup says which backup a cluster was made from.
type RestoredBackup struct {
	// Key of the snapshot object, and its checksum.
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	// ClusterID of the cluster the backup was taken of, in hex.
	ClusterID string `json:"clusterID,omitempty"`
	// Revision the backup holds at least.
	Revision int64 `json:"revision"`
	// BumpRevision is how far the restore moved the revision on: the restored cluster
	// starts, compacted, at the backup's own revision plus this.
	BumpRevision int64 `json:"bumpRevision"`
	// Time the backup was taken.
	Time metav1.Time `json:"time"`
}
