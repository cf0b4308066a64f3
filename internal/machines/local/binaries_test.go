package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// binariesDir lays out etcd binaries (empty executable files) in the given directories; a
// directory ending in "!" gets a file that is not executable.
func binariesDir(t *testing.T, dirs ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range dirs {
		mode := os.FileMode(0o755)
		if strings.HasSuffix(d, "!") {
			d, mode = strings.TrimSuffix(d, "!"), 0o644
		}
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "etcd"), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestBinary(t *testing.T) {
	root := binariesDir(t, "v3.6.16", "3.5.35", "v3.7.3!")
	b := &Backend{binariesDir: root}
	cases := map[string]struct {
		version string
		want    string
		errHas  []string
	}{
		"ToolsLayout":      {version: "3.6.16", want: filepath.Join(root, "v3.6.16", "etcd")},
		"LeadingV":         {version: "v3.6.16", want: filepath.Join(root, "v3.6.16", "etcd")},
		"PlainDirectory":   {version: "3.5.35", want: filepath.Join(root, "3.5.35", "etcd")},
		"NotExecutable":    {version: "3.7.3", errHas: []string{filepath.Join(root, "v3.7.3", "etcd"), "cluster/tools.sh etcd@v3.7.3"}},
		"Missing":          {version: "3.6.17", errHas: []string{filepath.Join(root, "v3.6.17", "etcd"), "cluster/tools.sh etcd@v3.6.17", "3.5.35, 3.6.16"}},
		"NotAVersion":      {version: "latest", errHas: []string{`"latest" is not an etcd version`}},
		"PathTraversal":    {version: "../../bin/sh", errHas: []string{"is not an etcd version"}},
		"ReleaseCandidate": {version: "3.7.0-rc.1", errHas: []string{filepath.Join(root, "v3.7.0-rc.1", "etcd")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := b.binary(tc.version)
			if len(tc.errHas) == 0 && err != nil {
				t.Fatalf("binary(%q): %v", tc.version, err)
			}
			for _, s := range tc.errHas {
				if err == nil || !strings.Contains(err.Error(), s) {
					t.Errorf("binary(%q): error %v, want it to mention %q", tc.version, err, s)
				}
			}
			if got != tc.want {
				t.Errorf("binary(%q) = %q, want %q", tc.version, got, tc.want)
			}
		})
	}
}

func TestVersions(t *testing.T) {
	root := binariesDir(t, "v3.6.16", "v3.5.35", "3.5.35", "v3.10.0", "v3.7.0-rc.1", "v3.7.0", "v3.7.3!", "src")
	// A directory without an etcd binary.
	if err := os.MkdirAll(filepath.Join(root, "v3.4.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A symlink to a version directory counts.
	if err := os.Symlink(filepath.Join(root, "v3.6.16"), filepath.Join(root, "v3.6.15")); err != nil {
		t.Fatal(err)
	}
	got, err := (&Backend{binariesDir: root}).Versions()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"3.5.35", "3.6.15", "3.6.16", "3.7.0-rc.1", "3.7.0", "3.10.0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Versions(): -want +got:\n%s", diff)
	}
	if _, err := (&Backend{binariesDir: filepath.Join(root, "none")}).Versions(); err == nil {
		t.Error("Versions() of a missing directory succeeded")
	}
}
