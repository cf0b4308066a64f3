package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	s3v1alpha1 "github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
)

// buckets: N Buckets with a canned ACL (public-read) and versioning on versitygw, whose root
// keys a credentials Secret holds. The floor creates each bucket with its ACL and ownership
// in one call and enables versioning in a second.
type buckets struct {
	kube client.Client
	// run tells this run's bucket names from any a run cut short left behind.
	run   string
	s3    *awss3.Client
	calls *atomic.Int64
	cfg   vgw
}

// vgw is versitygw's endpoint and root keys (cluster/versitygw.sh env).
type vgw struct{ endpoint, region, access, secret string }

func newBuckets(kube client.Client) (*buckets, error) {
	cfg := vgw{os.Getenv("VGW_ENDPOINT"), os.Getenv("VGW_REGION"), os.Getenv("VGW_ACCESS_KEY"), os.Getenv("VGW_SECRET_KEY")}
	if cfg.endpoint == "" || cfg.access == "" {
		return nil, fmt.Errorf("VGW_ENDPOINT and VGW_ACCESS_KEY are not set: start versitygw with cluster/versitygw.sh up and source its env")
	}
	if cfg.region == "" {
		cfg.region = "us-east-1"
	}
	calls := &atomic.Int64{}
	c := awss3.New(awss3.Options{
		Region:                     cfg.region,
		Credentials:                aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(cfg.access, cfg.secret, "")),
		UsePathStyle:               true,
		BaseEndpoint:               aws.String(cfg.endpoint),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		HTTPClient:                 &http.Client{Transport: countingTransport{next: http.DefaultTransport, n: calls}},
	})
	return &buckets{kube: kube, run: fmt.Sprintf("%06d", time.Now().Unix()%1000000), s3: c, calls: calls, cfg: cfg}, nil
}

func (*buckets) name() string    { return "buckets" }
func (*buckets) unit() string    { return "Buckets (canned ACL, versioning)" }
func (*buckets) backend() string { return "s3" }
func (*buckets) resource() schema.GroupResource {
	return schema.GroupResource{Group: s3v1alpha1.Group, Resource: "buckets"}
}
func (*buckets) newList() resource.ManagedList { return &s3v1alpha1.BucketList{} }
func (*buckets) cleanup(context.Context) error { return nil }

// prepare writes the credentials Secret the Buckets name.
func (b *buckets) prepare(ctx context.Context, _ int) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "vgw"},
		StringData: map[string]string{
			"AWS_ACCESS_KEY_ID": b.cfg.access, "AWS_SECRET_ACCESS_KEY": b.cfg.secret,
			"S3_ENDPOINT": b.cfg.endpoint, "AWS_REGION": b.cfg.region,
		},
	}
	return client.IgnoreAlreadyExists(b.kube.Create(ctx, s))
}

func (b *buckets) bucketName(who string, i int) string {
	return fmt.Sprintf("%s-%s-%05d", who, b.run, i)
}

func (b *buckets) object(i int) client.Object {
	return &s3v1alpha1.Bucket{
		ObjectMeta: objectMeta("scale-%05d", i),
		Spec: s3v1alpha1.BucketSpec{
			// Buckets take their endpoint and keys from the Secret, not a ProviderConfig.
			ForProvider: s3v1alpha1.BucketParameters{
				BucketName:           ptr.To(b.bucketName("scale", i)),
				CredentialsSecretRef: &xpv2.LocalSecretReference{Name: "vgw"},
				CannedACL:            ptr.To("public-read"),
				Versioning:           ptr.To("Enabled"),
			},
		},
	}
}

func (b *buckets) floor(ctx context.Context, n, concurrency int) (time.Duration, int64, error) {
	before := b.calls.Load()
	start := time.Now()
	err := parallel(n, concurrency, func(i int) error {
		name := aws.String(b.bucketName("floor", i))
		if _, err := b.s3.CreateBucket(ctx, &awss3.CreateBucketInput{
			Bucket: name, ACL: types.BucketCannedACLPublicRead, ObjectOwnership: types.ObjectOwnershipBucketOwnerPreferred,
		}); err != nil {
			return err
		}
		_, err := b.s3.PutBucketVersioning(ctx, &awss3.PutBucketVersioningInput{
			Bucket: name, VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
		})
		return err
	})
	d, made := time.Since(start), b.calls.Load()-before
	derr := parallel(n, concurrency, func(i int) error {
		_, err := b.s3.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String(b.bucketName("floor", i))})
		return err
	})
	if err != nil {
		return d, made, err
	}
	return d, made, derr
}
