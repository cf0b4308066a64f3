//go:build render

// Package render tests the configuration package's Compositions with `crossplane composition
// render --xrd`: the real Crossplane render engine and the real function-patch-and-transform,
// offline, in well under a second per case. Each case under testdata/ is a composite resource (xr.yaml), the
// composed resources as if observed (observed.yaml, optional), and what render must produce
// (expected.yaml). UPDATE_GOLDEN=1 rewrites expected.yaml from what render produced.
//
// cluster/test.sh runs it with the binaries cluster/tools.sh builds: CROSSPLANE_CLI,
// CROSSPLANE_CORE (the core binary render runs its engine with) and FUNCTION_PAT_BINARY.
package render

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func repoRoot() string {
	_, f, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(f), "..", ".."))
}

func mustEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run the render tests with `make test` (cluster/test.sh sets it from cluster/tools.sh)", name)
	}
	if _, err := os.Stat(v); err != nil {
		t.Fatalf("%s=%s: %v", name, v, err)
	}
	return v
}

// startFunction runs function-patch-and-transform without TLS (render's Development runtime)
// on a free port, and returns a functions.yaml that points render at it.
func startFunction(t *testing.T, binary string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, "--insecure", "--address="+addr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("cannot start %s: %v", binary, err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("function-patch-and-transform does not listen on %s: %s", addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	fns := filepath.Join(t.TempDir(), "functions.yaml")
	doc := fmt.Sprintf(`apiVersion: pkg.crossplane.io/v1
kind: Function
metadata:
  name: crossplane-contrib-function-patch-and-transform
  annotations:
    render.crossplane.io/runtime: Development
    render.crossplane.io/runtime-development-target: %s
spec:
  package: xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform:v0.5.0
`, addr)
	if err := os.WriteFile(fns, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return fns
}

// compositions maps a composite kind to the file of the Composition that composes it.
func compositions(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(), "package", "configuration", "apis", "*", "composition.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no compositions under package/configuration/apis: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		var c struct {
			Spec struct {
				CompositeTypeRef struct {
					Kind string `json:"kind"`
				} `json:"compositeTypeRef"`
			} `json:"spec"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[c.Spec.CompositeTypeRef.Kind] = f
	}
	return out
}

func splitDocs(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, d := range strings.Split(string(b), "\n---") {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(d), "---")) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("cannot parse render output: %v\n%s", err, d)
		}
		out = append(out, m)
	}
	return out
}

func TestCompositions(t *testing.T) {
	cli := mustEnv(t, "CROSSPLANE_CLI")
	core := mustEnv(t, "CROSSPLANE_CORE")
	fns := startFunction(t, mustEnv(t, "FUNCTION_PAT_BINARY"))
	byKind := compositions(t)

	cases, err := os.ReadDir("testdata")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases in testdata: %v", err)
	}
	covered := map[string]bool{}
	for _, c := range cases {
		dir := filepath.Join("testdata", c.Name())
		t.Run(c.Name(), func(t *testing.T) {
			xr, err := os.ReadFile(filepath.Join(dir, "xr.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var head struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(xr, &head); err != nil {
				t.Fatal(err)
			}
			comp, ok := byKind[head.Kind]
			if !ok {
				t.Fatalf("no composition composes %s", head.Kind)
			}
			covered[head.Kind] = true
			// --xrd: the XR is validated against the XRD's schema and gets its defaults, as
			// the API server would do.
			xrd := filepath.Join(filepath.Dir(comp), "definition.yaml")
			args := []string{"composition", "render", filepath.Join(dir, "xr.yaml"), comp, fns, "--xrd=" + xrd, "--crossplane-binary=" + core, "--include-full-xr"}
			if _, err := os.Stat(filepath.Join(dir, "observed.yaml")); err == nil {
				args = append(args, "--observed-resources="+filepath.Join(dir, "observed.yaml"))
			}
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(cli, args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("crossplane %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			golden := filepath.Join(dir, "expected.yaml")
			if os.Getenv("UPDATE_GOLDEN") != "" {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
			}
			if diff := cmp.Diff(splitDocs(t, want), splitDocs(t, stdout.Bytes())); diff != "" {
				t.Errorf("crossplane composition render of %s: -want, +got:\n%s", dir, diff)
			}
		})
	}
	for kind := range byKind {
		if !covered[kind] {
			t.Errorf("no case renders the composition of %s", kind)
		}
	}
}
