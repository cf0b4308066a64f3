package openstack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gophercloud/gophercloud/v2"
)

func TestParseCredentials(t *testing.T) {
	type want struct {
		cloud *Cloud
		err   string
	}
	cases := map[string]struct {
		data string
		opts ParseOptions
		want want
	}{
		"SingleEntryWithPassword": {
			data: `
auth:
  auth_url: https://keystone.example:5000/v3
  username: demo
  password: secret
  project_name: demo
  project_domain_name: Default
  user_domain_name: Default
region_name: RegionOne
interface: internal
`,
			want: want{cloud: &Cloud{
				Auth: gophercloud.AuthOptions{
					IdentityEndpoint: "https://keystone.example:5000/v3",
					Username:         "demo", Password: "secret", DomainName: "Default", AllowReauth: true,
					Scope: &gophercloud.AuthScope{ProjectName: "demo", DomainName: "Default"},
				},
				Endpoint: gophercloud.EndpointOpts{Region: "RegionOne", Availability: gophercloud.AvailabilityInternal},
			}},
		},
		"WholeCloudsYAMLPicksTheNamedCloud": {
			data: `
clouds:
  a: {auth: {auth_url: http://a/v3, username: u, password: p, project_id: pa}}
  b: {auth: {auth_url: http://b/v3, username: u, password: p, project_id: pb}, region_name: R}
`,
			opts: ParseOptions{Cloud: "b", Region: "Override"},
			want: want{cloud: &Cloud{
				Auth: gophercloud.AuthOptions{
					IdentityEndpoint: "http://b/v3", Username: "u", Password: "p", AllowReauth: true,
					Scope: &gophercloud.AuthScope{ProjectID: "pb"},
				},
				Endpoint: gophercloud.EndpointOpts{Region: "Override", Availability: gophercloud.AvailabilityPublic},
			}},
		},
		"SeveralCloudsNeedAName": {
			data: `clouds: {a: {auth: {auth_url: x}}, b: {auth: {auth_url: y}}}`,
			want: want{err: "the clouds.yaml has several clouds (a, b): set spec.cloud in the ProviderConfig to pick one"},
		},
		"UnknownCloud": {
			data: `clouds: {a: {auth: {auth_url: x}}}`,
			opts: ParseOptions{Cloud: "z"},
			want: want{err: `the clouds.yaml has no cloud named "z" (it has: a)`},
		},
		"ApplicationCredentialHasNoProjectScope": {
			data: `{auth: {auth_url: http://k/v3, application_credential_id: id, application_credential_secret: s, project_name: ignored}}`,
			want: want{cloud: &Cloud{
				Auth: gophercloud.AuthOptions{
					IdentityEndpoint: "http://k/v3", ApplicationCredentialID: "id", ApplicationCredentialSecret: "s", AllowReauth: true,
				},
				Endpoint: gophercloud.EndpointOpts{Availability: gophercloud.AvailabilityPublic},
			}},
		},
		"NoSecret": {
			data: `{auth: {auth_url: http://k/v3, username: u}}`,
			want: want{err: errNoSecret},
		},
		"NoAuthURL": {
			data: `{auth: {username: u, password: p}}`,
			want: want{err: errNoAuthURL},
		},
		"CACertPathRefusedForNamespacedConfigs": {
			data: `{auth: {auth_url: https://k/v3, username: u, password: p}, cacert: /etc/passwd}`,
			want: want{err: errCACertPath},
		},
		"BadCACert": {
			data: "{auth: {auth_url: https://k/v3, username: u, password: p}, cacert: \"-----BEGIN CERTIFICATE-----\\nnope\\n-----END CERTIFICATE-----\"}",
			want: want{err: errCACert},
		},
		"NotYAML": {
			data: "auth: [",
			want: want{err: errParseCredentials},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseCredentials([]byte(tc.data), tc.opts)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if tc.want.err != "" {
				if gotErr == "" || !strings.Contains(gotErr, tc.want.err) {
					t.Fatalf("ParseCredentials(...): got error %q, want one containing %q", gotErr, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseCredentials(...): unexpected error %v", err)
			}
			if diff := cmp.Diff(tc.want.cloud, got, cmpopts.IgnoreUnexported(gophercloud.AuthOptions{}), cmpopts.IgnoreFields(Cloud{}, "TLS")); diff != "" {
				t.Errorf("ParseCredentials(...): -want, +got:\n%s", diff)
			}
		})
	}
}

func TestParseCredentialsInsecure(t *testing.T) {
	got, err := ParseCredentials([]byte(`{auth: {auth_url: https://k/v3, username: u, password: p}, verify: false}`), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.TLS == nil || !got.TLS.InsecureSkipVerify {
		t.Errorf("verify: false: got TLS %+v, want InsecureSkipVerify", got.TLS)
	}
}
