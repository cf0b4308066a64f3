//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/common"
	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
	objv1alpha1 "github.com/stackservices/provider-stackservices/apis/objectstorage/v1alpha1"
	"github.com/stackservices/provider-stackservices/test/harness"
)

// A mistake is a manifest a user could plausibly apply, and what must come of it: a refusal
// at admission that says what is wrong, or (for what only the provider can tell) a condition
// on the resource that says it.
type mistake struct {
	manifest  string // spec only: kind and apiVersion come from the group below
	kind      string
	refused   string // a substring of the API server's refusal
	condition string // a substring of a False condition's message
	// closed uses a ClusterProviderConfig that opens nothing to the namespace, instead of
	// the namespace's own ProviderConfig.
	closed bool
}

const (
	sgAPI       = "network.m.stackservices.io/v1alpha1"
	objAPI      = "objectstorage.m.stackservices.io/v1alpha1"
	etcdAPI     = "etcd.m.stackservices.io/v1alpha1"
	validEtcd   = `version: "3.6.16", members: 3, machines: {type: Local}`
	validBucket = `contractRef: {name: c}`
	// validDestination is a backup destination admission accepts.
	validDestination = `bucketName: backups, credentialsSecretRef: {name: s3}`
)

// TestBadInput applies plausible mistakes across every kind, in one namespace, and checks
// that each is refused at admission or reported as an actionable condition, and that good
// resources in the same namespace (and another) converge all the same.
func TestBadInput(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	// A ClusterProviderConfig that opens nothing to this namespace.
	closed := "closed-" + ns
	env.NewClusterConfig(t, closed, ns, nil)

	mistakes := map[string]mistake{
		// SecurityGroup rules.
		"PortAboveRange":       {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, protocol: tcp, portRangeMin: 1, portRangeMax: 70000}]}`, refused: "should be less than or equal to 65535"},
		"PortRangeReversed":    {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, protocol: tcp, portRangeMin: 443, portRangeMax: 80}]}`, refused: "portRangeMin must be between 1 and portRangeMax"},
		"OnlyOnePortEnd":       {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, protocol: tcp, portRangeMin: 22}]}`, refused: "set both portRangeMin and portRangeMax"},
		"PortsWithoutProtocol": {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, portRangeMin: 22, portRangeMax: 22}]}`, refused: "need a protocol with ports"},
		"UnknownProtocol":      {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, protocol: http}]}`, refused: "protocol must be a protocol name"},
		"DirectionTypo":        {kind: "SecurityGroup", manifest: `{rules: [{direction: inbound}]}`, refused: `Unsupported value: "inbound"`},
		"CIDRWrongFamily":      {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, etherType: IPv6, remoteIPPrefix: 10.0.0.0/8}]}`, refused: "must be of the rule's etherType family"},
		"CIDRGarbage":          {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, remoteIPPrefix: "10.0.0.0/33"}]}`, refused: "remoteIPPrefix must be a CIDR"},
		"PrefixAndGroup":       {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, remoteIPPrefix: 10.0.0.0/8, remoteGroupID: abc}]}`, refused: "not both"},
		"ICMPTypeTooLarge":     {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, protocol: icmp, portRangeMin: 300}]}`, refused: "both 0-255"},
		// A reference into another namespace: the field does not exist.
		"RemoteGroupInAnotherNamespace": {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, remoteGroupRef: {name: db, namespace: kube-system}}]}`, refused: `unknown field "spec.forProvider.rules[0].remoteGroupRef.namespace"`},
		// A missing remote group with optional resolution: never "from anywhere".
		"OptionalRemoteGroupMissing": {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, protocol: tcp, portRangeMin: 5432, portRangeMax: 5432, remoteGroupRef: {name: nowhere, policy: {resolution: Optional}}}]}`, condition: "spec.forProvider.rules[0]: remoteGroupRef \"nowhere\" names no SecurityGroup"},
		"RequiredRemoteGroupMissing": {kind: "SecurityGroup", manifest: `{rules: [{direction: ingress, remoteGroupRef: {name: nowhere}}]}`, condition: "cannot resolve spec.forProvider.rules[0].remoteGroupRef"},

		// SecurityGroupAttachments.
		"AttachmentWithoutTargets":          {kind: "SecurityGroupAttachment", manifest: `{securityGroupID: x}`, refused: "an attachment needs targets"},
		"AttachmentServerNotUUID":           {kind: "SecurityGroupAttachment", manifest: `{securityGroupID: x, serverIDs: [web-1]}`, refused: "should match"},
		"AttachmentGroupInAnotherNamespace": {kind: "SecurityGroupAttachment", manifest: `{securityGroupRef: {name: web, namespace: default}, serverIDs: [` + uuidV4 + `]}`, refused: `unknown field "spec.forProvider.securityGroupRef.namespace"`},
		"AttachmentBadSelector":             {kind: "SecurityGroupAttachment", manifest: `{securityGroupID: x, nodeSelector: {matchExpressions: [{key: role, operator: Equals, values: [web]}]}}`, condition: "cannot use spec.forProvider.nodeSelector"},
		"HostNodesWithoutConsent":           {kind: "SecurityGroupAttachment", manifest: `{securityGroupID: x, nodeSelector: {matchLabels: {role: web}}}`, condition: "spec.tenancy.hostNodeNamespaces"},
		"HostNodesThroughClosedConfig":      {kind: "SecurityGroupAttachment", manifest: `{securityGroupID: x, nodeSelector: {}}`, closed: true, condition: "does not list it in spec.tenancy.hostNodeNamespaces"},
		"KubeconfigSecretMissing":           {kind: "SecurityGroupAttachment", manifest: `{securityGroupID: x, nodeSelector: {}, kubeconfigSecretRef: {name: nope, key: kubeconfig}}`, condition: "cannot read the kubeconfig Secret"},
		"KubeconfigKeyMissing":              {kind: "SecurityGroupAttachment", manifest: `{securityGroupID: x, nodeSelector: {}, kubeconfigSecretRef: {name: kubeconfigs, key: nope}}`, condition: `has no key "nope"`},
		"KubeconfigGarbage":                 {kind: "SecurityGroupAttachment", manifest: `{securityGroupID: x, nodeSelector: {}, kubeconfigSecretRef: {name: kubeconfigs, key: garbage}}`, condition: "cannot use the kubeconfig"},

		// Contracts.
		"RotationInDays":          {kind: "Contract", manifest: `{rotation: {period: 30days}}`, refused: "spec.forProvider.rotation.period"},
		"RotationEverySecond":     {kind: "Contract", manifest: `{rotation: {period: 1s, gracePeriod: 0s}}`, refused: "not rotated more often than hourly"},
		"GraceLongerThanPeriod":   {kind: "Contract", manifest: `{rotation: {period: 2h, gracePeriod: 3h}}`, refused: "gracePeriod must be shorter than rotation.period"},
		"PeriodUnderDefaultGrace": {kind: "Contract", manifest: `{rotation: {period: 1h}}`, refused: "longer than the default gracePeriod"},
		"RotationOverflow":        {kind: "Contract", manifest: `{rotation: {period: 99999999999999h}}`, refused: "spec.forProvider.rotation.period"},
		"OtherUserWithoutConsent": {kind: "Contract", manifest: `{userID: 0123456789abcdef0123456789abcdef}`, closed: true, condition: "does not list it in spec.tenancy.contractOwnerNamespaces"},

		// Buckets.
		"BucketNameUpperCase":      {kind: "Bucket", manifest: `{bucketName: My-Bucket, ` + validBucket + `}`, refused: "should match"},
		"BucketNameIP":             {kind: "Bucket", manifest: `{bucketName: 10.1.2.3, ` + validBucket + `}`, refused: "not an IP address"},
		"BucketWithoutCredentials": {kind: "Bucket", manifest: `{bucketName: abc-def}`, refused: "a bucket needs S3 credentials"},
		"BucketCannedAndGrants":    {kind: "Bucket", manifest: `{cannedACL: private, grantRead: [{type: id, value: x}], ` + validBucket + `}`, refused: "use cannedACL or grants"},
		"BucketContractElsewhere":  {kind: "Bucket", manifest: `{contractRef: {name: c, namespace: default}}`, refused: `unknown field "spec.forProvider.contractRef.namespace"`},
		"BucketContractMissing":    {kind: "Bucket", manifest: `{contractRef: {name: nope}}`, condition: "cannot resolve spec.forProvider.contractRef"},

		// EtcdClusters.
		"EtcdReleaseIntoASystemDir": {kind: "EtcdCluster", manifest: `{version: "3.6.16", members: 3, machines: {type: OpenStack, openstack: {flavor: f, image: i, subnet: s, etcdPath: /usr/bin/etcd, etcdReleaseURL: "https://mirror/etcd-v{version}-linux-amd64.tar.gz"}}}`, refused: "etcdPath's directory must name the version"},
		"EtcdPathDotDot":            {kind: "EtcdCluster", manifest: `{version: "3.6.16", members: 3, machines: {type: OpenStack, openstack: {flavor: f, image: i, subnet: s, etcdPath: "/opt/v{version}/../../bin/etcd"}}}`, refused: "must not hold . or .. segments"},
		"EtcdReleaseURLQuoted":      {kind: "EtcdCluster", manifest: `{version: "3.6.16", members: 3, machines: {type: OpenStack, openstack: {flavor: f, image: i, subnet: s, etcdReleaseURL: "https://mirror/x'$(id).tar.gz"}}}`, refused: "etcdReleaseURL"},
		"EtcdBootVolumeZero":        {kind: "EtcdCluster", manifest: `{version: "3.6.16", members: 3, machines: {type: OpenStack, openstack: {flavor: f, image: i, subnet: s, bootVolumeGiB: 0}}}`, refused: "bootVolumeGiB"},
		"EtcdNoMachines":            {kind: "EtcdCluster", manifest: `{version: "3.6.16", members: 3}`, condition: "ask the platform team to set etcdMachines"},
		"EtcdMachinesWithoutType":   {kind: "EtcdCluster", manifest: `{version: "3.6.16", members: 3, machines: {openstack: {flavor: f, image: i, subnet: s}}}`, refused: "spec.forProvider.machines.type: Required value"},
		"EtcdEvenMembers":           {kind: "EtcdCluster", manifest: `{version: "3.6.16", members: 4, machines: {type: Local}}`, refused: "members"},
		"EtcdUnknownVersion":        {kind: "EtcdCluster", manifest: `{version: "3.8.0", members: 3, machines: {type: Local}}`, refused: "version"},
		"EtcdReplaceAfterGarbage":   {kind: "EtcdCluster", manifest: `{` + validEtcd + `, replaceUnhealthyAfter: 2mins}`, refused: "replaceUnhealthyAfter"},
		"EtcdReplaceAfterZero":      {kind: "EtcdCluster", manifest: `{` + validEtcd + `, replaceUnhealthyAfter: 0s}`, refused: "replaceUnhealthyAfter must be between 1s and 8760h"},
		"EtcdRenewAfterExpiry":      {kind: "EtcdCluster", manifest: `{` + validEtcd + `, tls: {certificateValidity: 1h, renewBefore: 2h}}`, refused: "renewBefore must be shorter"},
		"EtcdCertificatesOverflow":  {kind: "EtcdCluster", manifest: `{` + validEtcd + `, tls: {certificateValidity: 9999999999h}}`, refused: "certificateValidity"},
		"EtcdBackupInATimeZone":     {kind: "EtcdCluster", manifest: `{` + validEtcd + `, backup: {schedule: "CRON_TZ=Europe/Paris 0 * * * *", destination: {` + validDestination + `}}}`, refused: "schedules are in UTC"},
		"EtcdBackupTwoBuckets":      {kind: "EtcdCluster", manifest: `{` + validEtcd + `, backup: {schedule: "@hourly", destination: {bucketRef: {name: b}, ` + validDestination + `}}}`, refused: "exactly one"},
		"EtcdBackupNoCredentials":   {kind: "EtcdCluster", manifest: `{` + validEtcd + `, backup: {schedule: "@hourly", destination: {bucketName: backups}}}`, refused: "S3 credentials"},
		"EtcdBackupPrefixEscapes":   {kind: "EtcdCluster", manifest: `{` + validEtcd + `, backup: {schedule: "@hourly", destination: {` + validDestination + `, prefix: "a/../b/"}}}`, refused: "prefix"},
		"EtcdBackupPrefixAbsolute":  {kind: "EtcdCluster", manifest: `{` + validEtcd + `, backup: {schedule: "@hourly", destination: {` + validDestination + `, prefix: "/etc/"}}}`, refused: "prefix"},
		"EtcdBackupKeepNone":        {kind: "EtcdCluster", manifest: `{` + validEtcd + `, backup: {schedule: "@hourly", destination: {` + validDestination + `}, retention: {keepLast: 0}}}`, refused: "keepLast"},
		"EtcdRestoreTwoBackups":     {kind: "EtcdCluster", manifest: `{` + validEtcd + `, restore: {source: {` + validDestination + `, prefix: "a/"}, key: a/b.snapshot, latestBefore: "2026-01-01T00:00:00Z"}}`, refused: "restore names one backup"},
		"EtcdRestoreLatestNoPrefix": {kind: "EtcdCluster", manifest: `{` + validEtcd + `, restore: {source: {` + validDestination + `}, latestBefore: "2026-01-01T00:00:00Z"}}`, refused: "needs source.prefix"},
		"EtcdRestoreRefAndSource":   {kind: "EtcdCluster", manifest: `{` + validEtcd + `, restore: {backupRef: {name: b}, source: {` + validDestination + `}}}`, refused: "knows its own"},
		"EtcdRestoreNoBump":         {kind: "EtcdCluster", manifest: `{` + validEtcd + `, restore: {backupRef: {name: b}, bumpRevision: 0}}`, refused: "bumpRevision"},
		"EtcdBackupNoDestination":   {kind: "EtcdBackup", manifest: `{clusterRef: {name: c}}`, refused: "destination"},
	}

	// What the condition cases refer to.
	if err := env.Kube.Create(harness.Ctx(t), kubeconfigSecret(ns, "kubeconfigs", map[string]string{"garbage": "{{{ not yaml"})); err != nil {
		t.Fatal(err)
	}

	for name, m := range mistakes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u := mistakeObject(t, ns, strings.ToLower(name), m)
			if m.closed {
				if err := unstructured.SetNestedMap(u.Object, map[string]any{"kind": "ClusterProviderConfig", "name": closed}, "spec", "providerConfigRef"); err != nil {
					t.Fatal(err)
				}
			}
			err := env.Kube.Create(harness.Ctx(t), u, client.FieldValidation("Strict"))
			if m.refused != "" {
				if err == nil || !strings.Contains(err.Error(), m.refused) {
					t.Fatalf("applied: got %v, want a refusal containing %q", err, m.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused at admission (%v), want it accepted and reported in a condition", err)
			}
			waitForConditionMessage(t, u, m.condition)
		})
	}

	// Good resources next to the bad ones converge, here and in another namespace.
	t.Run("GoodResourcesConverge", func(t *testing.T) {
		t.Parallel()
		sg := newSecurityGroup(ns, "good", v1alpha1.SecurityGroupParameters{Rules: []v1alpha1.SecurityGroupRule{rule("ingress", "IPv4", "tcp", 22, 22, "10.0.0.0/8")}})
		if err := env.Kube.Create(harness.Ctx(t), sg); err != nil {
			t.Fatal(err)
		}
		other := newNamespace(t)
		c := newContract(other, "good", objv1alpha1.ContractParameters{Rotation: &objv1alpha1.KeyRotation{Period: ptr.To(common.Duration("720h"))}})
		c.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "good-s3"}
		if err := env.Kube.Create(harness.Ctx(t), c); err != nil {
			t.Fatal(err)
		}
		waitForReady(t, client.ObjectKeyFromObject(sg))
		waitFor(t, c, "True", nil)
	})
}

const uuidV4 = "6f1c3a52-3a2b-4c8e-9a51-1f0e2d3c4b5a"

// mistakeObject makes the object of a mistake: its kind, in ns, with the manifest as its
// spec.forProvider and the namespace's ProviderConfig.
func mistakeObject(t *testing.T, ns, name string, m mistake) *unstructured.Unstructured {
	t.Helper()
	api := map[string]string{"SecurityGroup": sgAPI, "SecurityGroupAttachment": sgAPI, "Contract": objAPI, "Bucket": objAPI, "EtcdCluster": etcdAPI, "EtcdBackup": etcdAPI}[m.kind]
	forProvider := map[string]any{}
	if err := yaml.Unmarshal([]byte(m.manifest), &forProvider); err != nil {
		t.Fatalf("the test's manifest does not parse: %v", err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": api,
		"kind":       m.kind,
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"forProvider":       forProvider,
			"providerConfigRef": map[string]any{"kind": "ProviderConfig", "name": "default"},
		},
	}}
}

// waitForConditionMessage waits until one of the object's conditions is False with a message
// containing want.
func waitForConditionMessage(t *testing.T, u *unstructured.Unstructured, want string) {
	t.Helper()
	waitForConditionMessageIn(t, env.Kube, u, want)
}

// waitForConditionMessageIn is waitForConditionMessage on the API server kube reaches.
func waitForConditionMessageIn(t *testing.T, kube client.Reader, u *unstructured.Unstructured, want string) {
	t.Helper()
	key := client.ObjectKeyFromObject(u)
	harness.Eventually(t, waitReady, fmt.Sprintf("%s %s reports %q", u.GetKind(), key, want), func() error {
		got := u.DeepCopy()
		if err := kube.Get(harness.Ctx(t), key, got); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		var seen []string
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			msg, _ := cm["message"].(string)
			if cm["status"] == "False" && strings.Contains(msg, want) {
				return nil
			}
			seen = append(seen, fmt.Sprintf("%v=%v: %s", cm["type"], cm["status"], msg))
		}
		return fmt.Errorf("conditions: %s", strings.Join(seen, " | "))
	})
}

// toUnstructured is obj as waitForConditionMessage reads it: the same kind, namespace and name.
func toUnstructured(t *testing.T, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, env.Kube.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(obj.GetNamespace())
	u.SetName(obj.GetName())
	return u
}

// unstructuredConditions maps each condition type of u to its status.
func unstructuredConditions(u *unstructured.Unstructured) (map[string]string, bool, error) {
	conds, found, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	out := map[string]string{}
	for _, c := range conds {
		if cm, ok := c.(map[string]any); ok {
			ty, _ := cm["type"].(string)
			st, _ := cm["status"].(string)
			out[ty] = st
		}
	}
	return out, found, err
}

// TestABadStoredObjectStopsOnlyItself stores a Contract whose rotation period cannot be
// parsed ("30days") the way it happens in real clusters: written before the CRD validated the
// field. Before the fix, the provider then could not list any Contract, and Contracts in every
// namespace stopped. It runs on a control plane of its own, whose CRD it loosens for a moment.
func TestABadStoredObjectStopsOnlyItself(t *testing.T) {
	t.Parallel()
	e, err := harness.Start(harness.Options{Poll: poll})
	if err != nil {
		t.Fatalf("cannot start a second test bed: %v", err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	ctx := harness.Ctx(t)
	ns := uniqueName("stored")
	if err := e.NewNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}

	// The CRD as an older release shipped it: no validation of the period.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.Kube.Get(ctx, client.ObjectKey{Name: "contracts.objectstorage.m.stackservices.io"}, crd); err != nil {
		t.Fatal(err)
	}
	strict := crd.DeepCopy()
	rotation := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["forProvider"].Properties["rotation"]
	period := rotation.Properties["period"]
	period.Pattern, period.MaxLength, period.XValidations = "", nil, nil
	rotation.Properties["period"], rotation.XValidations = period, nil
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["forProvider"].Properties["rotation"] = rotation
	if err := e.Kube.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	bad := mistakeObject(t, ns, "stored-bad", mistake{kind: "Contract", manifest: `{rotation: {period: 30days}}`})
	harness.Eventually(t, 30*time.Second, "the loosened CRD takes the bad Contract", func() error {
		return e.Kube.Create(ctx, bad)
	})
	// This release's CRD again.
	harness.Eventually(t, 30*time.Second, "the CRD restored", func() error {
		current := &apiextensionsv1.CustomResourceDefinition{}
		if err := e.Kube.Get(ctx, client.ObjectKey{Name: crd.Name}, current); err != nil {
			return err
		}
		current.Spec = strict.Spec
		return e.Kube.Update(ctx, current)
	})

	good := newContract(ns, "stored-good", objv1alpha1.ContractParameters{Rotation: &objv1alpha1.KeyRotation{Period: ptr.To(common.Duration("720h"))}})
	if err := e.Kube.Create(ctx, good); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, waitReady, "the good Contract Ready next to the bad one", func() error {
		if err := e.Kube.Get(ctx, client.ObjectKeyFromObject(good), good); err != nil {
			return err
		}
		return harness.ConditionIs(good, xpv2.TypeReady, "True")
	})
	waitForConditionMessageIn(t, e.Kube, bad, `spec.forProvider.rotation.period "30days" is not a duration`)
	if meta.GetExternalName(bad) != "" {
		t.Errorf("keys were made for the bad Contract")
	}
}
