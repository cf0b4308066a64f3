package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Package type metadata.
const (
	Group   = "etcd.m.stackservices.io"
	Version = "v1alpha1"
)

var (
	// SchemeGroupVersion is group version used to register these objects.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
)

// EtcdCluster type metadata.
var (
	EtcdClusterKind             = reflect.TypeOf(EtcdCluster{}).Name()
	EtcdClusterGroupKind        = schema.GroupKind{Group: Group, Kind: EtcdClusterKind}.String()
	EtcdClusterGroupVersionKind = SchemeGroupVersion.WithKind(EtcdClusterKind)
)

// EtcdBackup type metadata.
var (
	EtcdBackupKind             = reflect.TypeOf(EtcdBackup{}).Name()
	EtcdBackupGroupKind        = schema.GroupKind{Group: Group, Kind: EtcdBackupKind}.String()
	EtcdBackupGroupVersionKind = SchemeGroupVersion.WithKind(EtcdBackupKind)
)

func init() {
	SchemeBuilder.Register(&EtcdCluster{}, &EtcdClusterList{}, &EtcdBackup{}, &EtcdBackupList{})
}
