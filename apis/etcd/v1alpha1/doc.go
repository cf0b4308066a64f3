// Package v1alpha1 contains the etcd.m.stackservices.io API: etcd clusters the provider runs,
// scales, upgrades and heals.
// +kubebuilder:object:generate=true
// +groupName=etcd.m.stackservices.io
// +versionName=v1alpha1
package v1alpha1
