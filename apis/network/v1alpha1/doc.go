// Package v1alpha1 contains the network.m.stackservices.io API: Neutron security groups and
// their attachment to the servers behind Kubernetes nodes.
// +kubebuilder:object:generate=true
// +groupName=network.m.stackservices.io
// +versionName=v1alpha1
package v1alpha1
