package local

import (
	"cmp"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errReadBinaries = "cannot read the directory of etcd binaries"
	errFmtVersion   = "%q is not an etcd version such as 3.6.16"
	errFmtNoBinary  = "etcd %s is not available: there is no executable %s (nor %s); build it with `cluster/tools.sh etcd@v%s` and point the etcd binaries directory at the parent of its directory (available here: %s)"
)

// versionPattern matches the version directories cluster/tools.sh makes (v3.6.16), and
// release candidates. It also keeps a version from ever naming a path outside BinariesDir.
var versionPattern = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// binary is the path of the etcd binary of the version (3.6.16, a leading v is accepted).
// cluster/tools.sh caches it as v3.6.16/etcd; 3.6.16/etcd, as a person may lay it out, works
// too.
func (b *Backend) binary(version string) (string, error) {
	if !versionPattern.MatchString(version) {
		return "", errors.Errorf(errFmtVersion, version)
	}
	v := strings.TrimPrefix(version, "v")
	paths := versionPaths(b.binariesDir, v)
	for _, p := range paths {
		if isExecutable(p) {
			return p, nil
		}
	}
	available := "none"
	if vs, err := b.Versions(); err == nil && len(vs) > 0 {
		available = strings.Join(vs, ", ")
	}
	return "", errors.Errorf(errFmtNoBinary, v, paths[0], paths[1], v, available)
}

// versionPaths are where the etcd binary of version v (no leading v) may be, in the order
// they are looked at.
func versionPaths(dir, v string) []string {
	return []string{filepath.Join(dir, "v"+v, "etcd"), filepath.Join(dir, v, "etcd")}
}

// Versions lists the etcd versions BinariesDir has a binary of, without a leading v, oldest
// first.
func (b *Backend) Versions() ([]string, error) {
	entries, err := os.ReadDir(b.binariesDir)
	if err != nil {
		return nil, errors.Wrap(err, errReadBinaries)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		v := strings.TrimPrefix(n, "v")
		if !versionPattern.MatchString(n) || slices.Contains(out, v) {
			continue
		}
		// A directory or a symlink to one; isExecutable follows links either way.
		if isExecutable(filepath.Join(b.binariesDir, n, "etcd")) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, compareVersions)
	return out, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// compareVersions orders versions that match versionPattern (without a leading v) by major,
// minor and patch, a release after its release candidates.
func compareVersions(a, b string) int {
	ac, apre, _ := strings.Cut(a, "-")
	bc, bpre, _ := strings.Cut(b, "-")
	an, bn := strings.Split(ac, "."), strings.Split(bc, ".")
	for i := range min(len(an), len(bn)) {
		x, _ := strconv.Atoi(an[i])
		y, _ := strconv.Atoi(bn[i])
		if c := cmp.Compare(x, y); c != 0 {
			return c
		}
	}
	switch {
	case apre == bpre:
		return 0
	case apre == "":
		return 1
	case bpre == "":
		return -1
	}
	return strings.Compare(apre, bpre)
}
