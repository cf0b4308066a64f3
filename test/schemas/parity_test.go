// Package schemas checks that the configuration package's XRDs validate what they pass on as
// strictly as the provider's CRDs do. An app team must get a bad field rejected when it applies
// the composite, not later as a condition of a composed resource it never sees; the XRDs copy
// the CRDs' rules by hand, and this test is what notices when a copy falls behind.
package schemas

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func repoRoot() string {
	_, f, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(f), "..", ".."))
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func get(m any, path ...string) any {
	for _, p := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}

// servedSchema is the OpenAPI schema of the first version of a CRD or XRD.
func servedSchema(t *testing.T, doc map[string]any, file string) map[string]any {
	t.Helper()
	versions, _ := get(doc, "spec", "versions").([]any)
	if len(versions) == 0 {
		t.Fatalf("%s: no versions", file)
	}
	s, ok := get(versions[0], "schema", "openAPIV3Schema").(map[string]any)
	if !ok {
		t.Fatalf("%s: no openAPIV3Schema", file)
	}
	return s
}

// at walks a schema along a field path (spec.rules, spec.backup.schedule).
func at(schema map[string]any, fieldPath string) (map[string]any, bool) {
	s := schema
	for _, f := range strings.Split(fieldPath, ".") {
		next, ok := get(s, "properties", f).(map[string]any)
		if !ok {
			return nil, false
		}
		s = next
	}
	return s, true
}

// constraints are the schema keywords that reject input. Descriptions and defaults may differ.
var constraints = []string{
	"type", "format", "enum", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
	"x-kubernetes-list-map-keys", "required",
}

// selfField finds the fields a CEL rule reads from the object it validates.
var selfField = regexp.MustCompile(`\bself\.([A-Za-z_][A-Za-z0-9_]*)`)

// atLeastAsStrict reports where xrd accepts what crd rejects: a constraint of crd that xrd
// lacks or has otherwise, or a CEL rule of crd that xrd does not carry, at any depth of the
// fields both have. xrd may add rules of its own and expose fewer fields.
func atLeastAsStrict(crd, xrd map[string]any, path string) []string {
	var out []string
	for _, k := range constraints {
		c, ok := crd[k]
		if !ok {
			continue
		}
		if x := xrd[k]; !reflect.DeepEqual(c, x) {
			out = append(out, fmt.Sprintf("%s: %s is %v in the CRD, %v in the XRD", path, k, c, x))
		}
	}
	// A list the CRD makes a set or a map rejects duplicates; atomic (the default) rejects
	// nothing.
	if lt, _ := crd["x-kubernetes-list-type"].(string); lt != "" && lt != "atomic" && xrd["x-kubernetes-list-type"] != lt {
		out = append(out, fmt.Sprintf("%s: x-kubernetes-list-type is %s in the CRD, %v in the XRD", path, lt, xrd["x-kubernetes-list-type"]))
	}
	xprops, _ := xrd["properties"].(map[string]any)
	for _, r := range celRules(crd) {
		// A rule about fields the XRD does not expose cannot be broken through it (and could
		// not compile there).
		if slices.ContainsFunc(selfField.FindAllStringSubmatch(r, -1), func(m []string) bool { _, ok := xprops[m[1]]; return !ok }) {
			continue
		}
		if !slices.Contains(celRules(xrd), r) {
			out = append(out, fmt.Sprintf("%s: the XRD lacks the CRD's rule %s", path, r))
		}
	}
	if cp, ok := crd["properties"].(map[string]any); ok {
		xp, _ := xrd["properties"].(map[string]any)
		for name, cs := range cp {
			xs, ok := xp[name].(map[string]any)
			if !ok {
				continue
			}
			out = append(out, atLeastAsStrict(cs.(map[string]any), xs, path+"."+name)...)
		}
	}
	if ci, ok := crd["items"].(map[string]any); ok {
		xi, _ := xrd["items"].(map[string]any)
		out = append(out, atLeastAsStrict(ci, xi, path+"[]")...)
	}
	if ca, ok := crd["additionalProperties"].(map[string]any); ok {
		xa, _ := xrd["additionalProperties"].(map[string]any)
		out = append(out, atLeastAsStrict(ca, xa, path+"{}")...)
	}
	return out
}

func celRules(s map[string]any) []string {
	var out []string
	vs, _ := s["x-kubernetes-validations"].([]any)
	for _, v := range vs {
		if r, ok := get(v, "rule").(string); ok {
			// The CRDs are generated (and folded); the XRDs are written by hand.
			out = append(out, strings.Join(strings.Fields(r), " "))
		}
	}
	return out
}

// crdSchemas maps apiVersion/kind to the CRD schema of each managed resource of the provider.
func crdSchemas(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(), "package", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs under package/crds: %v", err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		doc := readYAML(t, f)
		group, _ := get(doc, "spec", "group").(string)
		kind, _ := get(doc, "spec", "names", "kind").(string)
		versions, _ := get(doc, "spec", "versions").([]any)
		for _, v := range versions {
			name, _ := get(v, "name").(string)
			s, _ := get(v, "schema", "openAPIV3Schema").(map[string]any)
			out[group+"/"+name+"/"+kind] = s
		}
	}
	return out
}

// TestXRDsAreAsStrictAsTheCRDs follows every patch of every Composition that copies a field of
// the composite into the forProvider of a composed resource unchanged, and checks the XRD's
// schema of that field against the CRD's schema of the field it lands in.
func TestXRDsAreAsStrictAsTheCRDs(t *testing.T) {
	crds := crdSchemas(t)
	comps, err := filepath.Glob(filepath.Join(repoRoot(), "package", "configuration", "apis", "*", "composition.yaml"))
	if err != nil || len(comps) == 0 {
		t.Fatalf("no compositions: %v", err)
	}
	compared := 0
	for _, comp := range comps {
		xrdFile := filepath.Join(filepath.Dir(comp), "definition.yaml")
		xrd := servedSchema(t, readYAML(t, xrdFile), xrdFile)
		t.Run(filepath.Base(filepath.Dir(comp)), func(t *testing.T) {
			pipeline, _ := get(readYAML(t, comp), "spec", "pipeline").([]any)
			for _, step := range pipeline {
				resources, _ := get(step, "input", "resources").([]any)
				for _, r := range resources {
					name, _ := get(r, "name").(string)
					apiVersion, _ := get(r, "base", "apiVersion").(string)
					kind, _ := get(r, "base", "kind").(string)
					crd, ok := crds[apiVersion+"/"+kind]
					if !ok {
						t.Errorf("%s composes %s %s, which has no CRD in package/crds", name, apiVersion, kind)
						continue
					}
					patches, _ := get(r, "patches").([]any)
					for _, p := range patches {
						from, _ := get(p, "fromFieldPath").(string)
						to, _ := get(p, "toFieldPath").(string)
						if get(p, "type") != "FromCompositeFieldPath" || get(p, "transforms") != nil ||
							!strings.HasPrefix(from, "spec.") || !strings.HasPrefix(to, "spec.forProvider.") {
							continue
						}
						xs, ok := at(xrd, from)
						if !ok {
							t.Errorf("%s: patch from %s, which the XRD does not define", name, from)
							continue
						}
						cs, ok := at(crd, to)
						if !ok {
							t.Errorf("%s: patch to %s, which the %s CRD does not define", name, to, kind)
							continue
						}
						compared++
						for _, d := range atLeastAsStrict(cs, xs, from+" -> "+kind+" "+to) {
							t.Error(d)
						}
					}
				}
			}
		})
	}
	// Every composite passes fields on; fewer comparisons would mean the walk above broke.
	if compared < 15 {
		t.Errorf("compared %d fields, want at least 15: the compositions' patches were not found", compared)
	}
}

func TestAtLeastAsStrict(t *testing.T) {
	rule := func(r string) map[string]any {
		return map[string]any{"x-kubernetes-validations": []any{map[string]any{"rule": r}}}
	}
	cases := map[string]struct {
		crd, xrd map[string]any
		want     []string
	}{
		"SameBounds": {
			crd:  map[string]any{"type": "integer", "minimum": 1.0},
			xrd:  map[string]any{"type": "integer", "minimum": 1.0, "description": "differs freely"},
			want: nil,
		},
		"LooserBound": {
			crd:  map[string]any{"type": "integer", "maximum": 7.0},
			xrd:  map[string]any{"type": "integer", "maximum": 9.0},
			want: []string{"f: maximum is 7 in the CRD, 9 in the XRD"},
		},
		"MissingRuleInAnItem": {
			crd:  map[string]any{"items": map[string]any{"properties": map[string]any{"a": map[string]any{}}, "x-kubernetes-validations": []any{map[string]any{"rule": "has(self.a)"}}}},
			xrd:  map[string]any{"items": map[string]any{"properties": map[string]any{"a": map[string]any{}}}},
			want: []string{"f[]: the XRD lacks the CRD's rule has(self.a)"},
		},
		"RuleAboutAFieldTheXRDDoesNotHave": {
			crd:  rule("has(self.hidden)"),
			xrd:  map[string]any{},
			want: nil,
		},
		"RuleFoldedDifferently": {
			crd:  rule("self.x   >=\n 1"),
			xrd:  map[string]any{"properties": map[string]any{"x": map[string]any{}}, "x-kubernetes-validations": []any{map[string]any{"rule": "self.x >= 1"}}},
			want: nil,
		},
		"SetBecomesAtomic": {
			crd:  map[string]any{"x-kubernetes-list-type": "set"},
			xrd:  map[string]any{},
			want: []string{"f: x-kubernetes-list-type is set in the CRD, <nil> in the XRD"},
		},
		"FieldsOnlyTheCRDHas": {
			crd:  map[string]any{"properties": map[string]any{"more": map[string]any{"maxLength": 3.0}}},
			xrd:  map[string]any{"properties": map[string]any{}},
			want: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := atLeastAsStrict(tc.crd, tc.xrd, "f")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("atLeastAsStrict: -want, +got:\n%s", diff)
			}
		})
	}
}
