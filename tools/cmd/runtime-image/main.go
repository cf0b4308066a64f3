// Command runtime-image builds the provider's runtime OCI image as an image tarball, without
// Docker or any container runtime. The e2e tests use it for function-patch-and-transform's image
// too (-entrypoint /function, the path its own Dockerfile uses).
//
// The image is empty.Image plus one layer holding the binary (at -entrypoint, which is also the
// image's entrypoint; /usr/local/bin/provider by default), the build host's CA bundle and an
// empty /tmp. Every timestamp and owner in the layer and the config is fixed, so the same
// binary and CA bundle always give the same image digest. The tarball is what
// `crossplane xpkg build --embed-runtime-image-tarball` expects.
//
// Usage:
//
//	runtime-image -binary _output/bin/linux_amd64/provider -out _output/image.tar \
//	    -tag provider-stackservices:v0.1.0
//	runtime-image -binary .cache/function-pat/v0.5.0/function -entrypoint /function \
//	    -out _output/function.tar -tag function-patch-and-transform:v0.5.0
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	defaultEntrypoint = "/usr/local/bin/provider"
	caPath            = "/etc/ssl/certs/ca-certificates.crt"

	// nonRootUser is the conventional "nonroot" UID of distroless images; Crossplane's
	// default provider DeploymentRuntimeConfig runs providers as a non-root user too.
	nonRootUser = "65532"
)

// epoch is the fixed timestamp of every layer entry and of the image config, so that rebuilding
// from the same inputs yields the same digest.
var epoch = time.Unix(0, 0).UTC()

type options struct {
	binary     string
	entrypoint string
	caFile     string
	out        string
	tag        string
	arch       string
}

func main() {
	o := options{}
	flag.StringVar(&o.binary, "binary", "", "path of the statically linked provider binary (required)")
	flag.StringVar(&o.entrypoint, "entrypoint", defaultEntrypoint, "absolute path of the binary in the image, also its entrypoint")
	flag.StringVar(&o.caFile, "ca-certificates", caPath, "CA bundle to copy to "+caPath+" in the image")
	flag.StringVar(&o.out, "out", "", "path of the image tarball to write (required)")
	flag.StringVar(&o.tag, "tag", "provider-stackservices:latest", "image reference recorded in the tarball")
	flag.StringVar(&o.arch, "arch", "amd64", "image architecture (must match the binary)")
	flag.Parse()

	if o.binary == "" || o.out == "" || !path.IsAbs(o.entrypoint) || path.Clean(o.entrypoint) != o.entrypoint {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "runtime-image: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ref, err := name.ParseReference(o.tag)
	if err != nil {
		return fmt.Errorf("cannot parse tag %q: %w", o.tag, err)
	}
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return fmt.Errorf("cannot read binary: %w", err)
	}
	ca, err := os.ReadFile(o.caFile)
	if err != nil {
		return fmt.Errorf("cannot read CA bundle: %w", err)
	}

	layerTar, err := layerContent([]file{
		// World-writable and sticky like any /tmp: the provider runs as a non-root user.
		{path: "tmp/", mode: 0o1777, dir: true},
		{path: o.entrypoint[1:], mode: 0o755, data: bin},
		{path: caPath[1:], mode: 0o644, data: ca},
	})
	if err != nil {
		return fmt.Errorf("cannot build layer: %w", err)
	}
	layer, err := tarball.LayerFromOpener(
		func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer),
		// The digest pass and the write pass would otherwise each gzip the whole binary.
		tarball.WithCompressedCaching,
	)
	if err != nil {
		return fmt.Errorf("cannot build layer: %w", err)
	}

	img, err := image(layer, o.arch, o.entrypoint)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(path.Dir(o.out), 0o755); err != nil {
		return fmt.Errorf("cannot create output directory: %w", err)
	}
	if err := tarball.WriteToFile(o.out, ref, img); err != nil {
		return fmt.Errorf("cannot write image tarball: %w", err)
	}
	d, err := img.Digest()
	if err != nil {
		return fmt.Errorf("cannot compute image digest: %w", err)
	}
	fmt.Printf("%s %s %s\n", o.out, ref.Name(), d)
	return nil
}

// image assembles an OCI image from the single layer.
func image(layer v1.Layer, arch, entrypoint string) (v1.Image, error) {
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: epoch},
			CreatedBy: "runtime-image: " + path.Base(entrypoint) + " binary and CA certificates",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cannot append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("cannot read image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{entrypoint}
	cf.Config.User = nonRootUser
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"SSL_CERT_FILE=" + caPath,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("cannot set image config: %w", err)
	}
	return img, nil
}

// file is one entry of the layer. mode holds tar mode bits (permissions plus sticky/setuid).
type file struct {
	path string
	mode int64
	dir  bool
	data []byte
}

// layerContent writes an uncompressed tar of files, adding their parent directories first, all
// owned by root with the fixed timestamp.
func layerContent(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	dir := func(p string, mode int64) error {
		if seen[p] {
			return nil
		}
		seen[p] = true
		return tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeDir,
			Name:     p,
			Mode:     mode,
			ModTime:  epoch,
		})
	}
	for _, f := range files {
		// Parents, outermost first: "usr/", "usr/local/", ...
		parents := []string{}
		for p := path.Dir(path.Clean(f.path)); p != "." && p != "/"; p = path.Dir(p) {
			parents = append([]string{p + "/"}, parents...)
		}
		for _, p := range parents {
			if err := dir(p, 0o755); err != nil {
				return nil, err
			}
		}
		if f.dir {
			if err := dir(f.path, f.mode); err != nil {
				return nil, err
			}
			continue
		}
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeReg,
			Name:     f.path,
			Mode:     f.mode,
			Size:     int64(len(f.data)),
			ModTime:  epoch,
		}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
