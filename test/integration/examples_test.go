//go:build integration

package integration

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stackservices/provider-stackservices/test/harness"
)

// TestExamplesAreAccepted applies every managed resource and config of examples/ as a
// server-side dry run: what the README points users at must pass the CRDs' schemas and CEL
// rules as they are. (`make dev` applies them for real and waits until they are Ready.)
func TestExamplesAreAccepted(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"providerconfig", "network", "objectstorage", "etcd"} {
		files, err := filepath.Glob(filepath.Join(harness.RepoRoot(), "examples", dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no examples in examples/%s: %v", dir, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			d := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
			for n := 0; ; n++ {
				u := &unstructured.Unstructured{}
				if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatalf("%s: document %d: %v", f, n, err)
				}
				if len(u.Object) == 0 {
					continue
				}
				if err := env.Kube.Create(harness.Ctx(t), u, client.DryRunAll); err != nil {
					t.Errorf("%s: %s %s: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
				}
			}
		}
	}
}
