//go:build render

package render

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// validation is what `crossplane resource validate -o json` reports.
type validation struct {
	Summary struct {
		Total          int `json:"total"`
		Valid          int `json:"valid"`
		Invalid        int `json:"invalid"`
		MissingSchemas int `json:"missingSchemas"`
	} `json:"summary"`
	Resources []struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Name       string `json:"name"`
		Status     string `json:"status"`
		Errors     []struct {
			Type    string `json:"type"`
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"errors"`
	} `json:"resources"`
}

// validate runs `crossplane resource validate` of resources (files or directories) against
// the provider's CRDs, the configuration's XRDs, Crossplane core's own CRDs and the function's
// input CRD, offline: the
// extensions hold no package reference, and an empty --crossplane-image stops the CLI from
// fetching core's schemas from a registry (cluster/tools.sh copied them from the same build).
func validate(t *testing.T, resources ...string) validation {
	t.Helper()
	cli := mustEnv(t, "CROSSPLANE_CLI")
	coreCRDs := filepath.Join(filepath.Dir(mustEnv(t, "CROSSPLANE_CORE")), "crds")
	if _, err := os.Stat(coreCRDs); err != nil {
		t.Fatalf("Crossplane core's CRDs (cluster/tools.sh crossplane-core copies them): %v", err)
	}
	// The Compositions' pipeline inputs are validated too: against the input CRD that the
	// function's own package ships.
	functionInput := filepath.Join(filepath.Dir(mustEnv(t, "FUNCTION_PAT_BINARY")), "package", "input")
	extensions := []string{
		filepath.Join(repoRoot(), "package", "crds"),
		// The XRDs (and Compositions, which the CLI skips as extensions). Not the package's
		// crossplane.yaml: a Configuration's metadata makes the CLI fetch its dependencies.
		filepath.Join(repoRoot(), "package", "configuration", "apis"),
		coreCRDs,
		functionInput,
	}
	args := []string{"resource", "validate", strings.Join(extensions, ","), strings.Join(resources, ","),
		"--crossplane-image=", "--cache-dir=" + t.TempDir(), "-o", "json"}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(cli, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A non-zero exit only says that something is invalid; the report says what.
	_ = cmd.Run()
	var v validation
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatalf("crossplane %s: no report (%v)\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return v
}

// TestExamplesValidate checks every manifest a platform or app team applies from examples/,
// and the configuration package's own objects, against the schemas (OpenAPI and CEL) that the
// API server would apply. Only Kubernetes' built-in kinds have no schema here.
func TestExamplesValidate(t *testing.T) {
	v := validate(t, filepath.Join(repoRoot(), "examples"),
		filepath.Join(repoRoot(), "package", "configuration", "apis"),
		filepath.Join(repoRoot(), "package", "configuration", "activation.yaml"))

	builtin := map[string]bool{"v1": true, "rbac.authorization.k8s.io/v1": true}
	checked := map[string]bool{}
	for _, r := range v.Resources {
		switch {
		case r.Status == "missingSchema" && builtin[r.APIVersion]:
		case r.Status != "valid":
			t.Errorf("%s %s %s: %s %v", r.APIVersion, r.Kind, r.Name, r.Status, r.Errors)
		default:
			checked[r.Kind] = true
		}
	}
	// What must have been validated, not merely found: a kind missing here means an example
	// or a schema went missing from the check.
	for _, kind := range []string{
		"Provider", "DeploymentRuntimeConfig", "Configuration", "ManagedResourceActivationPolicy",
		"ClusterProviderConfig", "ProviderConfig", "SecurityGroup", "SecurityGroupAttachment",
		"Contract", "Bucket", "EtcdCluster", "EtcdBackup", "NodeFirewall", "ObjectBucket",
		"EtcdDatabase", "CompositeResourceDefinition", "Composition", "Resources",
	} {
		if !checked[kind] {
			t.Errorf("no %s was validated", kind)
		}
	}
}

// TestValidateRejects shows that the check above can fail: manifests that break the XRDs'
// and CRDs' rules (CEL included) are reported invalid, each for its own reason.
func TestValidateRejects(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(`apiVersion: platform.stackservices.io/v1alpha1
kind: EtcdDatabase
metadata: {name: two-members, namespace: shop}
spec: {version: "3.6.16", members: 2}
---
apiVersion: platform.stackservices.io/v1alpha1
kind: ObjectBucket
metadata: {name: unknown-acl, namespace: shop}
spec: {cannedACL: everyone-writes}
---
apiVersion: network.m.stackservices.io/v1alpha1
kind: SecurityGroup
metadata: {name: bad-port-range, namespace: shop}
spec:
  forProvider:
    rules:
      - {direction: ingress, protocol: tcp, portRangeMin: 443, portRangeMax: 80}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	v := validate(t, bad)
	got := map[string]string{}
	for _, r := range v.Resources {
		got[r.Name] = r.Status
	}
	want := map[string]string{"two-members": "invalid", "unknown-acl": "invalid", "bad-port-range": "invalid"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("validation of invalid manifests: -want, +got:\n%s", diff)
	}
}
