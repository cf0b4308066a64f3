//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stackservices/provider-stackservices/internal/clients/s3"
)

// vgwUserSecret is the secret key of the versitygw accounts the tests create.
const vgwUserSecret = "test-secret-key-0123456789"

// createVGWUser creates a versitygw account (role userplus: it may create buckets) through
// the admin API and returns its access key, which is also its canonical ID.
func createVGWUser(t *testing.T, access string) string {
	t.Helper()
	body := []byte(fmt.Sprintf(`<Account><Access>%s</Access><Secret>%s</Secret><Role>userplus</Role></Account>`, access, vgwUserSecret))
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPatch, os.Getenv("VGW_ADMIN_ENDPOINT")+"/create-user", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", h)
	creds := aws.Credentials{AccessKeyID: os.Getenv("VGW_ACCESS_KEY"), SecretAccessKey: os.Getenv("VGW_SECRET_KEY")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, h, "s3", os.Getenv("VGW_REGION"), time.Now()); err != nil {
		t.Fatal(err)
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("cannot reach the versitygw admin API: %v", err)
	}
	defer rsp.Body.Close()
	if rsp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(rsp.Body)
		t.Fatalf("create-user %s: %d %s", access, rsp.StatusCode, b)
	}
	return access
}

// s3PutObject writes an object with the plain SDK, as an app would.
func s3PutObject(ctx context.Context, cfg s3.Config, bucket, key string, data []byte) error {
	c := awss3.New(awss3.Options{
		BaseEndpoint:               aws.String(cfg.Endpoint),
		Region:                     cfg.Region,
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
	})
	_, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	return err
}
