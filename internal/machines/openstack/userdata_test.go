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
	cc, files := parseUserData(t, ud)
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

// TestUserDataOfARestoredMemberFromAMirror: the script gets the release's URL and checksum,
// and the snapshot's pre-signed URL, size and checksum, the URL in a file only root reads,
// every value quoted for sh whatever it holds. An encrypted snapshot never gets this far.
func TestUserDataOfARestoredMemberFromAMirror(t *testing.T) {
	cfg := memberConfig()
	cfg.Restore = &machines.RestoreSource{
		URL: "https://s3.example/b/k?X-Amz-Signature=s&x='$(touch /pwned)'", Size: 1 << 30,
		SHA256: strings.Repeat("cd", 32), BumpRevision: 1e9,
	}
	ud, err := userData(member{Name: "db-0", Address: "198.19.9.10", EtcdPath: "/opt/etcd-releases/v{version}/etcd",
		Release: &Release{URL: "http://mirror/v3.6.16/etcd-v3.6.16-linux-amd64.tar.gz", SHA256: strings.Repeat("ab", 32)}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	_, files := parseUserData(t, ud)
	want := map[string]cloudFile{
		releaseEnv: {Path: releaseEnv, Permissions: "0644", Owner: "root:root", Content: "ETCD_RELEASE_URL='http://mirror/v3.6.16/etcd-v3.6.16-linux-amd64.tar.gz'\n" +
			"ETCD_RELEASE_SHA256='" + strings.Repeat("ab", 32) + "'\n"},
		restoreEnv: {Path: restoreEnv, Permissions: "0600", Owner: "root:root", Content: `ETCD_RESTORE_URL='https://s3.example/b/k?X-Amz-Signature=s&x='\''$(touch /pwned)'\'''` + "\n" +
			"ETCD_RESTORE_SIZE='1073741824'\n" +
			"ETCD_RESTORE_SHA256='" + strings.Repeat("cd", 32) + "'\n" +
			"ETCD_RESTORE_NAME='db-0'\n" +
			"ETCD_RESTORE_INITIAL_CLUSTER='db-0=https://198.19.9.10:2380'\n" +
			"ETCD_RESTORE_INITIAL_CLUSTER_TOKEN='uid'\n" +
			"ETCD_RESTORE_PEER_URL='https://198.19.9.10:2380'\n" +
			"ETCD_RESTORE_BUMP='--bump-revision=1000000000 --mark-compacted'\n"},
	}
	for p, w := range want {
		if diff := cmp.Diff(w, files[p]); diff != "" {
			t.Errorf("%s: -want, +got:\n%s", p, diff)
		}
	}
	if !strings.Contains(files[unitPath].Content, "ExecStart=/bin/sh /etc/etcd/member.sh /opt/etcd-releases/v3.6.16/etcd --name=db-0 ") {
		t.Errorf("unit:\n%s", files[unitPath].Content)
	}
}

// parseUserData reads user-data as cloud-init would, with its files by path.
func parseUserData(t *testing.T, ud []byte) (cloudConfig, map[string]cloudFile) {
	t.Helper()
	var cc cloudConfig
	if err := yaml.Unmarshal(ud, &cc); err != nil {
		t.Fatal(err)
	}
	files := map[string]cloudFile{}
	for _, f := range cc.WriteFiles {
		files[f.Path] = f
	}
	return cc, files
}
