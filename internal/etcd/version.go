package etcd

import (
	"fmt"
	"strconv"
	"strings"
)

// A Version of etcd: major.minor.patch.
type Version struct {
	Major, Minor, Patch int
}

// ParseVersion reads 3.6.16 (a leading v is accepted: etcd's binaries print one).
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(s), "v"), ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("%q is not an etcd version such as 3.6.16", s)
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return Version{}, fmt.Errorf("%q is not an etcd version such as 3.6.16", s)
		}
		v[i] = n
	}
	return Version{Major: v[0], Minor: v[1], Patch: v[2]}, nil
}

// MustParseVersion is ParseVersion for versions known to be valid (tests, constants).
func MustParseVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// IsZero is true for a version nobody knows yet.
func (v Version) IsZero() bool { return v == Version{} }

// Compare returns -1, 0 or 1 as v is older than, the same as or newer than o.
func (v Version) Compare(o Version) int {
	for _, d := range [...]int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}

// MinorString is major.minor: 3.6.
func (v Version) MinorString() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// CheckUpgradePath says whether a cluster whose members run versions from oldest to newest
// may move to target. etcd supports upgrades of one minor version at a time and no
// downgrades; a mixed cluster (an upgrade under way) may only continue to the version the
// newest member runs, or one minor beyond the oldest.
func CheckUpgradePath(oldest, newest, target Version) error {
	switch {
	case target.Major != oldest.Major:
		return fmt.Errorf("cannot move etcd from %s to %s: only upgrades within major version %d are supported", oldest, target, oldest.Major)
	case target.Compare(newest) < 0:
		return fmt.Errorf("cannot downgrade etcd from %s to %s: etcd does not support downgrades; set the version back to %s or newer", newest, target, newest)
	case target.Minor > oldest.Minor+1:
		return fmt.Errorf("cannot upgrade etcd from %s to %s: etcd upgrades one minor version at a time; upgrade to the newest %d.%d release first and let it finish",
			oldest, target, oldest.Major, oldest.Minor+1)
	}
	return nil
}
