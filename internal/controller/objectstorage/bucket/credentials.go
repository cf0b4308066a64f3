package bucket

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
)

const (
	errGetContract      = "cannot get the Contract named in spec.forProvider.contractName"
	errFmtNoSecretRef   = "Contract %s writes no connection Secret: set its spec.writeConnectionSecretToRef"
	errGetSecret        = "cannot get the Secret holding the bucket's S3 credentials"
	errFmtMissingKey    = "the Secret %s has no %s: %s"
	errNoCredentials    = "spec.forProvider has neither contractName nor credentialsSecretRef"
	notYetPublishedHint = "the Contract may not have published its keys yet"
)

// s3Config reads the S3 credentials of a bucket: from its Contract's connection Secret, or
// from the Secret it names itself. Both are in the bucket's namespace.
func s3Config(ctx context.Context, kube client.Reader, cr *v1alpha1.Bucket) (s3.Config, error) {
	p := cr.Spec.ForProvider
	var secretName, hint string
	switch {
	case p.ContractName != nil:
		c := &v1alpha1.Contract{}
		if err := kube.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: *p.ContractName}, c); err != nil {
			return s3.Config{}, errors.Wrap(err, errGetContract)
		}
		ref := c.GetWriteConnectionSecretToReference()
		if ref == nil {
			return s3.Config{}, errors.Errorf(errFmtNoSecretRef, c.GetName())
		}
		secretName, hint = ref.Name, notYetPublishedHint
	case p.CredentialsSecretRef != nil:
		secretName, hint = p.CredentialsSecretRef.Name, "add it to the Secret"
	default:
		return s3.Config{}, errors.New(errNoCredentials)
	}

	s := &corev1.Secret{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: cr.GetNamespace(), Name: secretName}, s); err != nil {
		return s3.Config{}, errors.Wrap(err, errGetSecret)
	}
	get := func(keys ...string) (string, error) {
		for _, k := range keys {
			if v := s.Data[k]; len(v) > 0 {
				return string(v), nil
			}
		}
		return "", errors.Errorf(errFmtMissingKey, cr.GetNamespace()+"/"+secretName, keys[0], hint)
	}
	var cfg s3.Config
	var err error
	if cfg.AccessKeyID, err = get(v1alpha1.ConnectionAWSAccessKeyID, v1alpha1.ConnectionAccessKeyID); err != nil {
		return s3.Config{}, err
	}
	if cfg.SecretAccessKey, err = get(v1alpha1.ConnectionAWSSecretKey, v1alpha1.ConnectionSecretAccessKey); err != nil {
		return s3.Config{}, err
	}
	if cfg.Endpoint, err = get(v1alpha1.ConnectionS3Endpoint, v1alpha1.ConnectionEndpoint); err != nil {
		return s3.Config{}, err
	}
	cfg.Region, _ = get(v1alpha1.ConnectionAWSRegion, v1alpha1.ConnectionRegion)
	cfg.Region = ptr.Deref(p.Region, cfg.Region)
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	return cfg, nil
}
