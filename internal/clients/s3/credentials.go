package s3

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
)

const (
	errFmtGetContract   = "cannot get the Contract named in %s"
	errFmtNoSecretRef   = "Contract %s writes no connection Secret: set its spec.writeConnectionSecretToRef" //nolint:gosec // A message, not a credential.
	errGetSecret        = "cannot get the Secret holding the S3 credentials"
	errFmtMissingKey    = "the Secret %s has no %s: %s"
	errFmtNoSource      = "%s names neither a Contract nor a Secret with S3 credentials"
	errGetBucket        = "cannot get the Bucket whose credentials to use"
	notYetPublishedHint = "the Contract may not have published its keys yet"
)

// A CredentialSource says where the S3 credentials of a resource come from: the connection
// Secret of a Contract, or a Secret of the same shape. Both are in Namespace: nothing a
// tenant writes reaches another namespace's keys.
type CredentialSource struct {
	Namespace string
	// Field is the field that names the source, for error messages (spec.forProvider).
	Field string
	// ContractName and SecretName: exactly one is set.
	ContractName *string
	SecretName   *string
	// Region overrides the region the credentials name.
	Region *string
}

// BucketCredentials is where a Bucket's credentials come from.
func BucketCredentials(b *v1alpha1.Bucket) CredentialSource {
	p := b.Spec.ForProvider
	src := CredentialSource{Namespace: b.GetNamespace(), Field: "spec.forProvider.contractName", ContractName: p.ContractName, Region: p.Region}
	if p.ContractName == nil && p.CredentialsSecretRef != nil {
		src.Field, src.SecretName = "spec.forProvider.credentialsSecretRef", &p.CredentialsSecretRef.Name
	}
	return src
}

// CredentialsOfBucket reads the Bucket name in namespace and returns its bucket's name and
// where its credentials come from.
func CredentialsOfBucket(ctx context.Context, kube client.Reader, namespace, name string) (string, CredentialSource, error) {
	b := &v1alpha1.Bucket{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, b); err != nil {
		return "", CredentialSource{}, errors.Wrap(err, errGetBucket)
	}
	return BucketName(b), BucketCredentials(b), nil
}

// BucketName is the name of a Bucket's bucket in S3: its external name once set, else the
// name its spec asks for.
func BucketName(b *v1alpha1.Bucket) string {
	if n := meta.GetExternalName(b); n != "" {
		return n
	}
	return ptr.Deref(b.Spec.ForProvider.BucketName, b.GetName())
}

// ConfigFrom reads the credentials src names.
func ConfigFrom(ctx context.Context, kube client.Reader, src CredentialSource) (Config, error) {
	var secretName, hint string
	switch {
	case src.ContractName != nil:
		c := &v1alpha1.Contract{}
		if err := kube.Get(ctx, types.NamespacedName{Namespace: src.Namespace, Name: *src.ContractName}, c); err != nil {
			return Config{}, errors.Wrapf(err, errFmtGetContract, src.Field)
		}
		ref := c.GetWriteConnectionSecretToReference()
		if ref == nil {
			return Config{}, errors.Errorf(errFmtNoSecretRef, c.GetName())
		}
		secretName, hint = ref.Name, notYetPublishedHint
	case src.SecretName != nil:
		secretName, hint = *src.SecretName, "add it to the Secret" //nolint:gosec // A hint, not a credential.
	default:
		return Config{}, errors.Errorf(errFmtNoSource, src.Field)
	}

	s := &corev1.Secret{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: src.Namespace, Name: secretName}, s); err != nil {
		return Config{}, errors.Wrap(err, errGetSecret)
	}
	get := func(keys ...string) (string, error) {
		for _, k := range keys {
			if v := s.Data[k]; len(v) > 0 {
				return string(v), nil
			}
		}
		return "", errors.Errorf(errFmtMissingKey, src.Namespace+"/"+secretName, keys[0], hint)
	}
	var cfg Config
	var err error
	if cfg.AccessKeyID, err = get(v1alpha1.ConnectionAWSAccessKeyID, v1alpha1.ConnectionAccessKeyID); err != nil {
		return Config{}, err
	}
	if cfg.SecretAccessKey, err = get(v1alpha1.ConnectionAWSSecretKey, v1alpha1.ConnectionSecretAccessKey); err != nil {
		return Config{}, err
	}
	if cfg.Endpoint, err = get(v1alpha1.ConnectionS3Endpoint, v1alpha1.ConnectionEndpoint); err != nil {
		return Config{}, err
	}
	cfg.Region, _ = get(v1alpha1.ConnectionAWSRegion, v1alpha1.ConnectionRegion)
	cfg.Region = ptr.Deref(src.Region, cfg.Region)
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	return cfg, nil
}
