package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Package type metadata.
const (
	Group   = "network.m.stackservices.io"
	Version = "v1alpha1"
)

var (
	// SchemeGroupVersion is group version used to register these objects.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
)

// SecurityGroup type metadata.
var (
	SecurityGroupKind             = reflect.TypeOf(SecurityGroup{}).Name()
	SecurityGroupGroupKind        = schema.GroupKind{Group: Group, Kind: SecurityGroupKind}.String()
	SecurityGroupGroupVersionKind = SchemeGroupVersion.WithKind(SecurityGroupKind)
)

// SecurityGroupAttachment type metadata.
var (
	SecurityGroupAttachmentKind             = reflect.TypeOf(SecurityGroupAttachment{}).Name()
	SecurityGroupAttachmentGroupKind        = schema.GroupKind{Group: Group, Kind: SecurityGroupAttachmentKind}.String()
	SecurityGroupAttachmentGroupVersionKind = SchemeGroupVersion.WithKind(SecurityGroupAttachmentKind)
)

func init() {
	SchemeBuilder.Register(&SecurityGroup{}, &SecurityGroupList{})
	SchemeBuilder.Register(&SecurityGroupAttachment{}, &SecurityGroupAttachmentList{})
}
