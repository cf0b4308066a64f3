package openstack

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

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
	var cc cloudConfig
	if err := yaml.Unmarshal(ud, &cc); err != nil {
		t.Fatal(err)
	}
	files := map[string]cloudFile{}
	for _, f := range cc.WriteFiles {
		files[f.Path] = f
	}
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

// TestStartRefusesAnIdentity: an age identity would outlive the restore in the server's
// user-data; Start refuses it before it makes anything.
func TestStartRefusesAnIdentity(t *testing.T) {
	c := &cloud{}
	b := newBackend(c)
	if _, err := b.Allocate(context.Background(), "uid", "db-0"); err != nil {
		t.Fatal(err)
	}
	cfg := memberConfig()
	cfg.Restore = &machines.RestoreSource{URL: "https://s3/k", Size: 1, SHA256: strings.Repeat("cd", 32), AgeIdentity: "AGE-SECRET-KEY-1XYZ"}
	if _, err := b.Start(context.Background(), "uid", "db-0", cfg); err == nil || len(c.created) != 0 {
		t.Errorf("Start with an identity: %v, %d servers made; want a refusal and none", err, len(c.created))
	}
}

// TestReleaseFor: a server downloads only a release whose file the platform team's checksums
// list; the tenant's URL chooses where from, never what runs.
func TestReleaseFor(t *testing.T) {
	sums := fakeChecksums{"etcd-v3.6.16-linux-amd64.tar.gz": strings.Repeat("ab", 32)}
	cases := map[string]struct {
		template string
		sums     Checksums
		want     *Release
		wantErr  string
	}{
		"NoTemplate": {},
		"Known": {template: "https://mirror/etcd/v{version}/etcd-v{version}-linux-amd64.tar.gz", sums: sums,
			want: &Release{URL: "https://mirror/etcd/v3.6.16/etcd-v3.6.16-linux-amd64.tar.gz", SHA256: strings.Repeat("ab", 32)}},
		"NotListed": {template: "https://mirror/etcd/v{version}/etcd-v{version}-linux-arm64.tar.gz", sums: sums,
			wantErr: "no SHA-256 is known for etcd-v3.6.16-linux-arm64.tar.gz, the file etcdReleaseURL names for etcd 3.6.16"},
		"NoChecksums": {template: "https://mirror/etcd-v{version}.tar.gz", wantErr: "knows no release checksums"},
		"NoFile":      {template: "https://mirror/", sums: sums, wantErr: "is not a URL of a file"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := releaseFor(tc.template, "3.6.16", tc.sums)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want, +got:\n%s", diff)
			}
		})
	}
}

type fakeChecksums map[string]string

func (f fakeChecksums) Checksum(file string) (string, error) {
	if s, ok := f[file]; ok {
		return s, nil
	}
	return "", &MissingChecksum{File: file}
}

func TestParseChecksums(t *testing.T) {
	a, b := strings.Repeat("ab", 32), strings.Repeat("CD", 32)
	got, err := ParseChecksums([]byte("# etcd releases\n" + a + "  v3.6.16/etcd-v3.6.16-linux-amd64.tar.gz\n\n" + b + " *etcd-v3.5.35-linux-amd64.tar.gz\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"etcd-v3.6.16-linux-amd64.tar.gz": a, "etcd-v3.5.35-linux-amd64.tar.gz": strings.ToLower(b)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want, +got:\n%s", diff)
	}
	for _, bad := range []string{"nothex  f\n", a + "\n", strings.Repeat("zz", 32) + "  f\n", a + "  f\n" + b + "  x/f\n"} {
		if _, err := ParseChecksums([]byte(bad)); err == nil {
			t.Errorf("ParseChecksums(%q) accepted it", bad)
		}
	}
}
