package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Package type metadata.
const (
	Group   = "objectstorage.m.stackservices.io"
	Version = "v1alpha1"
)

var (
	// SchemeGroupVersion is group version used to register these objects.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
)

// Contract type metadata.
var (
	ContractKind             = reflect.TypeOf(Contract{}).Name()
	ContractGroupKind        = schema.GroupKind{Group: Group, Kind: ContractKind}.String()
	ContractGroupVersionKind = SchemeGroupVersion.WithKind(ContractKind)
)

// Bucket type metadata.
var (
	BucketKind             = reflect.TypeOf(Bucket{}).Name()
	BucketGroupKind        = schema.GroupKind{Group: Group, Kind: BucketKind}.String()
	BucketGroupVersionKind = SchemeGroupVersion.WithKind(BucketKind)
)

func init() {
	SchemeBuilder.Register(&Contract{}, &ContractList{})
	SchemeBuilder.Register(&Bucket{}, &BucketList{})
}
