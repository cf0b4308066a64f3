// Package controller sets up every controller of the provider.
package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/stackservices/provider-stackservices/internal/controller/config"
	"github.com/stackservices/provider-stackservices/internal/controller/etcd/etcdbackup"
	"github.com/stackservices/provider-stackservices/internal/controller/etcd/etcdcluster"
	"github.com/stackservices/provider-stackservices/internal/controller/managedcontroller"
	"github.com/stackservices/provider-stackservices/internal/controller/network/securitygroup"
	"github.com/stackservices/provider-stackservices/internal/controller/network/securitygroupattachment"
	"github.com/stackservices/provider-stackservices/internal/controller/objectstorage/bucket"
	"github.com/stackservices/provider-stackservices/internal/controller/objectstorage/contract"
)

// SetupGated registers every controller to start once its CRDs are established.
func SetupGated(mgr ctrl.Manager, o managedcontroller.Options) error {
	for _, setup := range []func(ctrl.Manager, managedcontroller.Options) error{
		config.SetupGated,
		securitygroup.SetupGated,
		securitygroupattachment.SetupGated,
		contract.SetupGated,
		bucket.SetupGated,
		etcdcluster.SetupGated,
		etcdbackup.SetupGated,
	} {
		if err := setup(mgr, o); err != nil {
			return err
		}
	}
	return nil
}
