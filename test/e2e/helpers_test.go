//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stackservices/provider-stackservices/internal/clients/openstack"
	"github.com/stackservices/provider-stackservices/internal/clients/s3"
)

// putGet writes an object and reads it back with the plain SDK, as an app would.
func putGet(ctx context.Context, cfg s3.Config, bucket string) error {
	c := awss3.New(awss3.Options{
		BaseEndpoint:               aws.String(cfg.Endpoint),
		Region:                     cfg.Region,
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
	})
	body := []byte("hello from the app")
	if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("hello.txt"), Body: bytes.NewReader(body)}); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	out, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("hello.txt")})
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	defer out.Body.Close()
	got, err := io.ReadAll(out.Body)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, body) {
		return fmt.Errorf("read back %q", got)
	}
	return nil
}

// s3ForDemo returns an S3 client with fresh keys of the demo project (the claim's own keys are
// revoked with it), deleted when the test ends.
func s3ForDemo(t *testing.T, e *env) (*s3.Client, error) {
	ctx := context.Background()
	cloud, err := openstack.ParseCredentials(e.clouds, openstack.ParseOptions{Cloud: "demo"})
	if err != nil {
		return nil, err
	}
	sess, err := openstack.NewSession(ctx, cloud, openstack.SessionOptions{})
	if err != nil {
		return nil, err
	}
	creds, err := sess.EC2Credentials()
	if err != nil {
		return nil, err
	}
	user, project, err := creds.WhoAmI()
	if err != nil {
		return nil, err
	}
	access, secret, err := openstack.NewEC2Keys()
	if err != nil {
		return nil, err
	}
	c := openstack.EC2Credential{Access: access, Secret: secret, UserID: user, ProjectID: project}
	if err := creds.CreateEC2Credential(ctx, c); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = creds.DeleteEC2Credential(context.Background(), user, c.Access) })
	endpoint, region, err := sess.S3Endpoint()
	if err != nil {
		return nil, err
	}
	return s3.New(s3.Config{Endpoint: endpoint, Region: region, AccessKeyID: c.Access, SecretAccessKey: c.Secret})
}
