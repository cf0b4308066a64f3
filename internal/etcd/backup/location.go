package backup

import (
	"context"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
)

// A Location is where backups are: a bucket, a key prefix, and the credentials that reach it.
type Location struct {
	Bucket, Prefix string
	S3             s3.Config
}

// Locate resolves a destination of the API (a Bucket, or a bucket name with a Contract or a
// Secret) in namespace ns: everything it reads is there. field names d in error messages;
// defaultPrefix is the prefix when d names none.
func Locate(ctx context.Context, kube client.Reader, ns string, d v1alpha1.BackupDestination, field, defaultPrefix string) (Location, error) {
	loc := Location{Prefix: ptr.Deref(d.Prefix, defaultPrefix)}
	src := s3.CredentialSource{Namespace: ns, Field: field, Region: d.Region}
	switch {
	case d.BucketRef != nil:
		b, bsrc, err := s3.CredentialsOfBucket(ctx, kube, ns, d.BucketRef.Name)
		if err != nil {
			return Location{}, err
		}
		loc.Bucket = b
		if src.Region == nil {
			src.Region = bsrc.Region
		}
		src.Field, src.ContractName, src.SecretName = "the Bucket "+d.BucketRef.Name, bsrc.ContractName, bsrc.SecretName
	case d.BucketName != nil:
		loc.Bucket = *d.BucketName
		if d.ContractRef != nil {
			src.Field, src.ContractName = field+".contractRef", &d.ContractRef.Name
		} else if d.CredentialsSecretRef != nil {
			src.Field, src.SecretName = field+".credentialsSecretRef", &d.CredentialsSecretRef.Name
		}
	}
	var err error
	loc.S3, err = s3.ConfigFrom(ctx, kube, src)
	return loc, err
}

// LocateBackup resolves where an EtcdBackup goes (or went).
func LocateBackup(ctx context.Context, kube client.Reader, b *v1alpha1.EtcdBackup) (Location, error) {
	ns := b.GetNamespace()
	return Locate(ctx, kube, ns, b.Spec.ForProvider.Destination, "spec.forProvider.destination", ns+"/"+b.Spec.ForProvider.ClusterRef.Name+"/")
}
