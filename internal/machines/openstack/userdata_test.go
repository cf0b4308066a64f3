package openstack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

func TestUserData(t *testing.T) {
	cfg := memberConfig()
	cfg.QuotaBackendBytes = 8 << 30
	ud, err := userData(member{Name: "db-0", Address: "198.19.9.10", EtcdPath: "/opt/etcd/v{version}/etcd", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(ud), "#cloud-config\n") {
		t.Fatalf("user-data does not start with #cloud-config:\n%s", ud)
	}
	var cc cloudConfig
	if err := yaml.Unmarshal(ud, &cc); err != nil {
		t.Fatal(err)
	}
	files := map[string]cloudFile{}
	for _, f := range cc.WriteFiles {
		files[f.Path] = f
	}
	if got := files["/etc/etcd/pki/member.key"]; got.Content != "key" || got.Permissions != "0600" {
		t.Errorf("member key: %+v, want the key, 0600", got)
	}
	if got := files["/etc/etcd/pki/ca.crt"].Content; got != string(cfg.CA) {
		t.Errorf("CA certificate %q", got)
	}
	unit := files[unitPath].Content
	for _, want := range []string{
		"ExecStart=/bin/sh /etc/etcd/member.sh /opt/etcd/v3.6.16/etcd --name=db-0 --data-dir=/var/lib/etcd --listen-peer-urls=https://198.19.9.10:2380 ",
		"--initial-cluster=db-0=https://198.19.9.10:2380 ", "--client-cert-auth=true", "--peer-client-cert-auth=true",
		"--quota-backend-bytes=8589934592", "Restart=always", "WantedBy=multi-user.target",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	if diff := cmp.Diff([][]string{{"mkdir", "-p", "-m", "0700", "/var/lib/etcd"}, {"systemctl", "daemon-reload"}, {"systemctl", "enable", "--now", "etcd-member.service"}}, cc.RunCmd); diff != "" {
		t.Errorf("runcmd: -want, +got:\n%s", diff)
	}
	// A member gets its own certificate and key, never the CA's key: MemberConfig has none
	// to give, and nothing else in the user-data is a key.
	if n := strings.Count(string(ud), "member.key"); n != 3 {
		t.Errorf("the member key is named %d times (its file, --key-file, --peer-key-file), want 3", n)
	}
}

func TestUserDataRefusals(t *testing.T) {
	big := memberConfig()
	big.Cert = []byte(strings.Repeat("x", MaxUserData))
	noToken := memberConfig()
	noToken.InitialClusterToken = ""
	for name, cfg := range map[string]machines.MemberConfig{"TooBig": big, "Invalid": noToken} {
		t.Run(name, func(t *testing.T) {
			if _, err := userData(member{Name: "db-0", Address: "198.19.9.10", EtcdPath: "/opt/etcd/v{version}/etcd", Config: cfg}); err == nil {
				t.Error("userData accepted it")
			}
		})
	}
}
