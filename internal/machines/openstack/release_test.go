package openstack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
