package schemas

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The annotations a registry shows for a package (Upbound's marketplace and the Crossplane
// docs read these).
var registryAnnotations = []string{
	"friendly-name.meta.crossplane.io",
	"meta.crossplane.io/maintainer",
	"meta.crossplane.io/source",
	"meta.crossplane.io/license",
	"meta.crossplane.io/description",
	"meta.crossplane.io/readme",
}

func annotations(t *testing.T, file string) map[string]string {
	t.Helper()
	a, _ := get(readYAML(t, file), "metadata", "annotations").(map[string]any)
	got := map[string]string{}
	for k, v := range a {
		s, _ := v.(string)
		got[k] = s
	}
	for _, k := range registryAnnotations {
		if strings.TrimSpace(got[k]) == "" {
			t.Errorf("%s: no %s", file, k)
		}
	}
	return got
}

// TestPackageMetadata: both packages carry what a registry shows, declare the license the
// repository ships, and their readmes keep up with their APIs: every kind, and for the
// configuration every field an app team sets.
func TestPackageMetadata(t *testing.T) {
	root := repoRoot()
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(license), "Apache License") || !strings.Contains(string(license), "Version 2.0") {
		t.Error("LICENSE is not the Apache License 2.0")
	}

	provider := annotations(t, filepath.Join(root, "package", "crossplane.yaml"))
	crds, err := filepath.Glob(filepath.Join(root, "package", "crds", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	for _, f := range crds {
		kind, _ := get(readYAML(t, f), "spec", "names", "kind").(string)
		if kind == "ProviderConfigUsage" {
			continue // Crossplane's bookkeeping, not for users.
		}
		if !strings.Contains(provider["meta.crossplane.io/readme"], kind) {
			t.Errorf("the provider's readme does not mention %s", kind)
		}
	}

	configuration := annotations(t, filepath.Join(root, "package", "configuration", "crossplane.yaml"))
	readme := configuration["meta.crossplane.io/readme"]
	xrds, err := filepath.Glob(filepath.Join(root, "package", "configuration", "apis", "*", "definition.yaml"))
	if err != nil || len(xrds) == 0 {
		t.Fatalf("no XRDs: %v", err)
	}
	for _, f := range xrds {
		doc := readYAML(t, f)
		kind, _ := get(doc, "spec", "names", "kind").(string)
		if !strings.Contains(readme, kind) {
			t.Errorf("the configuration's readme does not mention %s", kind)
		}
		fields, _ := get(servedSchema(t, doc, f), "properties", "spec", "properties").(map[string]any)
		var missing []string
		for name := range fields {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(readme) {
				missing = append(missing, name)
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			t.Errorf("the configuration's readme does not mention these fields of %s: %s", kind, strings.Join(missing, ", "))
		}
	}
	for _, pkg := range []map[string]string{provider, configuration} {
		if pkg["meta.crossplane.io/license"] != "Apache-2.0" {
			t.Errorf("license annotation %q, want Apache-2.0 (the LICENSE file)", pkg["meta.crossplane.io/license"])
		}
	}
}
