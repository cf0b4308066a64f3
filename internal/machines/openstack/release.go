package openstack

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errNoChecksums      = "spec.forProvider.machines.openstack.etcdReleaseURL is set, but this provider knows no release checksums (--etcd-release-checksums): ask the platform team to give it the SHA256SUMS of the mirrored releases"
	errReadChecksums    = "cannot read the provider's etcd release checksums"
	errFmtChecksumLine  = "line %d of the etcd release checksums is not \"<sha256>  <file>\""
	errFmtChecksumTwice = "the etcd release checksums give %s two different SHA-256s"
	errFmtReleaseURL    = "etcdReleaseURL for version %s is not a URL of a file: %q"
	errFmtNoChecksum    = "no SHA-256 is known for %s, the file etcdReleaseURL names for etcd %s: the platform team adds it to the provider's release checksums (--etcd-release-checksums), or the cluster names a version the mirror holds"
)

// A Release is the etcd release tarball a server downloads, and the SHA-256 it must have.
type Release struct {
	URL, SHA256 string
}

// Checksums tell the SHA-256 of a release tarball by its file name. A file they do not list
// is a *MissingChecksum.
type Checksums interface {
	Checksum(file string) (string, error)
}

// ChecksumsFile is a file in the format of sha256sum and of the SHA256SUMS etcd publishes
// with each release: "<hex sha256>  <file name>" per line. It is read at each lookup, so a
// platform team that mounts it from a ConfigMap adds a release without restarting the
// provider. It is the platform team's: a tenant names a mirror URL, never a checksum, so a
// tenant can make a server download only a tarball the platform team vouched for.
type ChecksumsFile string

// Checksum returns the SHA-256 of file, or an error saying it is not known.
func (f ChecksumsFile) Checksum(file string) (string, error) {
	data, err := os.ReadFile(string(f))
	if err != nil {
		return "", errors.Wrap(err, errReadChecksums)
	}
	sums, err := ParseChecksums(data)
	if err != nil {
		return "", err
	}
	sum, ok := sums[file]
	if !ok {
		return "", &MissingChecksum{File: file}
	}
	return sum, nil
}

// ParseChecksums reads sha256sum's output: a checksum and a file name per line (a "*" before
// the name marks binary mode). Blank lines and # comments are skipped.
func ParseChecksums(data []byte) (map[string]string, error) {
	sums := map[string]string{}
	s := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || len(f[0]) != 64 {
			return nil, errors.Errorf(errFmtChecksumLine, n)
		}
		if _, err := hex.DecodeString(f[0]); err != nil {
			return nil, errors.Errorf(errFmtChecksumLine, n)
		}
		file, sum := path.Base(strings.TrimPrefix(f[1], "*")), strings.ToLower(f[0])
		if old, ok := sums[file]; ok && old != sum {
			return nil, errors.Errorf(errFmtChecksumTwice, file)
		}
		sums[file] = sum
	}
	return sums, errors.Wrap(s.Err(), errReadChecksums)
}

// releaseFor is the release a member of version downloads: template with {version}
// expanded, and the checksum of the file it names. No template: nil, the image has etcd.
func releaseFor(template, version string, sums Checksums) (*Release, error) {
	if template == "" {
		return nil, nil //nolint:nilnil // No release to download is not an error.
	}
	if sums == nil {
		return nil, errors.New(errNoChecksums)
	}
	raw := strings.ReplaceAll(template, "{version}", version)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || path.Base(u.Path) == "/" || path.Base(u.Path) == "." {
		return nil, errors.Errorf(errFmtReleaseURL, version, raw)
	}
	file := path.Base(u.Path)
	sum, err := sums.Checksum(file)
	if err != nil {
		var missing *MissingChecksum
		if errors.As(err, &missing) {
			return nil, errors.Errorf(errFmtNoChecksum, file, version)
		}
		return nil, err
	}
	return &Release{URL: raw, SHA256: sum}, nil
}

// MissingChecksum is a file the checksums do not list.
type MissingChecksum struct{ File string }

func (e *MissingChecksum) Error() string { return "no checksum is known for " + e.File }
