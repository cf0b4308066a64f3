// Package apis contains the provider's API types.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"

	etcdv1alpha1 "github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	networkv1alpha1 "github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	objectstoragev1alpha1 "github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/apis/v1alpha1"
)

// AddToScheme adds every API group of the provider to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{
		v1alpha1.SchemeBuilder.AddToScheme,
		networkv1alpha1.SchemeBuilder.AddToScheme,
		objectstoragev1alpha1.SchemeBuilder.AddToScheme,
		etcdv1alpha1.SchemeBuilder.AddToScheme,
	} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}
