// Package v1alpha1 contains the objectstorage.m.stackservices.io API: S3 accounts (Contracts)
// and Buckets.
// +kubebuilder:object:generate=true
// +groupName=objectstorage.m.stackservices.io
// +versionName=v1alpha1
package v1alpha1
