//go:build integration

package openstack

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stackservices/provider-stackservices/internal/etcd/pki"
	"github.com/stackservices/provider-stackservices/internal/machines"
)

// schema runs Debian's `cloud-init schema` (cluster/tools.sh cloud-init) on user-data.
func schema(t *testing.T, userData []byte) (string, error) {
	t.Helper()
	bin := os.Getenv("CLOUD_INIT")
	if bin == "" {
		t.Fatal("CLOUD_INIT is not set: run the tests with `make test`, or set it to $(cluster/tools.sh path cloud-init)")
	}
	f := filepath.Join(t.TempDir(), "user-data")
	if err := os.WriteFile(f, userData, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "schema", "--config-file", f)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestUserDataIsValidCloudConfig checks a member's user-data, with real certificates, against
// the schema of the cloud-init a Debian 12 image boots with.
func TestUserDataIsValidCloudConfig(t *testing.T) {
	now := time.Now()
	ca, err := pki.NewCA("etcd-ca", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	memberCert, err := ca.IssueMember("orders-0", []net.IP{net.ParseIP("198.19.9.10")}, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	// With every part a member can have: a release to download, a restore.
	ud, err := userData(member{Name: "orders-0", Address: "198.19.9.10", EtcdPath: "/opt/etcd-releases/v{version}/etcd",
		Release: &Release{URL: "https://mirror.example/etcd/v3.6.16/etcd-v3.6.16-linux-amd64.tar.gz", SHA256: strings.Repeat("ab", 32)},
		Config: machines.MemberConfig{
			Version: "3.6.16", InitialCluster: "orders-0=https://198.19.9.10:2380", InitialClusterState: "new",
			InitialClusterToken: "uid", CA: ca.CertPEM, Cert: memberCert.CertPEM, Key: memberCert.KeyPEM,
			QuotaBackendBytes: 2 << 30, AutoCompactionMode: "periodic", AutoCompactionRetention: "1h",
			Restore: &machines.RestoreSource{URL: "https://s3.example/b/k?X-Amz-Signature=x&a='b'", Size: 1 << 30,
				SHA256: strings.Repeat("cd", 32), BumpRevision: 1e9},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := schema(t, ud); err != nil || !strings.Contains(out, "Valid cloud-config") {
		t.Errorf("cloud-init schema: %v\n%s", err, out)
	}
	t.Logf("user-data of a member: %d bytes (Nova takes up to %d)", len(ud), MaxUserData)
	if bytes.Contains(ud, ca.KeyPEM) {
		t.Error("the CA's key is in a member's user-data")
	}

	// The check can fail: a document cloud-init would refuse is reported.
	if out, err := schema(t, []byte("#cloud-config\nwrite_files:\n  - content: x\nruncmd: 5\n")); err == nil {
		t.Errorf("cloud-init schema accepted an invalid document:\n%s", out)
	}
}
