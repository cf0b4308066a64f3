package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

func TestEtcdArgs(t *testing.T) {
	dir := "/state/c/m1"
	r := record{Cluster: "c", Name: "m1", Address: "127.0.2.2", PeerURL: "https://127.0.2.2:2380", ClientURL: "https://127.0.2.2:2379"}
	base := machines.MemberConfig{
		Version:             "3.6.16",
		InitialCluster:      "m0=https://127.0.2.1:2380,m1=https://127.0.2.2:2380",
		InitialClusterState: "new",
		InitialClusterToken: "c",
	}
	always := []string{
		"--name=m1",
		"--data-dir=/state/c/m1/data",
		"--listen-peer-urls=https://127.0.2.2:2380",
		"--listen-client-urls=https://127.0.2.2:2379",
		"--initial-advertise-peer-urls=https://127.0.2.2:2380",
		"--advertise-client-urls=https://127.0.2.2:2379",
		"--initial-cluster=m0=https://127.0.2.1:2380,m1=https://127.0.2.2:2380",
		"--initial-cluster-state=new",
		"--initial-cluster-token=c",
		"--cert-file=/state/c/m1/tls/member.crt",
		"--key-file=/state/c/m1/tls/member.key",
		"--trusted-ca-file=/state/c/m1/tls/ca.crt",
		"--client-cert-auth=true",
		"--peer-cert-file=/state/c/m1/tls/member.crt",
		"--peer-key-file=/state/c/m1/tls/member.key",
		"--peer-trusted-ca-file=/state/c/m1/tls/ca.crt",
		"--peer-client-cert-auth=true",
	}
	with := func(mod func(*machines.MemberConfig)) machines.MemberConfig {
		c := base
		mod(&c)
		return c
	}
	cases := map[string]struct {
		cfg  machines.MemberConfig
		want []string
	}{
		"EtcdDefaults": {cfg: base, want: always},
		"Joining": {
			cfg:  with(func(c *machines.MemberConfig) { c.InitialClusterState = "existing" }),
			want: append(append([]string{}, always[:7]...), append([]string{"--initial-cluster-state=existing"}, always[8:]...)...),
		},
		"Everything": {
			cfg: with(func(c *machines.MemberConfig) {
				c.QuotaBackendBytes = 8 << 30
				c.AutoCompactionMode = "periodic"
				c.AutoCompactionRetention = "1h"
				c.SnapshotCount = 10000
			}),
			want: append(append([]string{}, always...),
				"--quota-backend-bytes=8589934592",
				"--auto-compaction-mode=periodic",
				"--auto-compaction-retention=1h",
				"--snapshot-count=10000"),
		},
		"OnlyRetention": {
			cfg:  with(func(c *machines.MemberConfig) { c.AutoCompactionRetention = "1000" }),
			want: append(append([]string{}, always...), "--auto-compaction-retention=1000"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, etcdArgs(dir, r, tc.cfg)); diff != "" {
				t.Errorf("etcdArgs(...): -want +got:\n%s", diff)
			}
		})
	}
}

func TestMemberEnv(t *testing.T) {
	got := memberEnv([]string{"PATH=/bin", "ETCD_NAME=x", "HOME=/root", "ETCDCTL_API=3", "MY_ETCD_DIR=/x"})
	want := []string{"PATH=/bin", "HOME=/root", "ETCDCTL_API=3", "MY_ETCD_DIR=/x"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("memberEnv(...): -want +got:\n%s", diff)
	}
}

func TestTailFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "etcd.log")
	var lines []string
	for i := range 5000 {
		lines = append(lines, fmt.Sprintf(`{"level":"info","msg":"line %d"}`, i))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := strings.Join(lines[len(lines)-3:], "\n")
	if got := tailFile(path, 3); got != want {
		t.Errorf("tailFile(..., 3) = %q, want %q", got, want)
	}
	if got := tailFile(filepath.Join(t.TempDir(), "none"), 3); !strings.Contains(got, "cannot read") {
		t.Errorf("tailFile of a missing file = %q, want it to say so", got)
	}
}
