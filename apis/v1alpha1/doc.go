// Package v1alpha1 contains the provider's configuration types: the namespaced ProviderConfig,
// the cluster-scoped ClusterProviderConfig and the ProviderConfigUsage that tracks both.
// +kubebuilder:object:generate=true
// +groupName=m.stackservices.io
// +versionName=v1alpha1
package v1alpha1
