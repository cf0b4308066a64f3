package securitygroupattachment

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

// kubeconfig is a kubeconfig with one cluster, user and context; cluster and user are the
// YAML of their entries.
func kubeconfig(cluster, user string) []byte {
	return []byte(`apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: ` + cluster + `}]
users: [{name: u, user: ` + user + `}]
`)
}

func TestTenantRESTConfig(t *testing.T) {
	ca := "Y2E=" // "ca"
	cases := map[string]struct {
		data    []byte
		want    *rest.Config
		refused []string // substrings of the error
	}{
		"InlineCertificates": {
			data: kubeconfig(`{server: "https://10.0.0.1:6443", certificate-authority-data: `+ca+`}`, `{client-certificate-data: Y2VydA==, client-key-data: a2V5}`),
			want: &rest.Config{Host: "https://10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")}},
		},
		"InlineToken": {
			data: kubeconfig(`{server: "https://k.example.com", certificate-authority-data: `+ca+`, tls-server-name: k}`, `{token: abc}`),
			want: &rest.Config{Host: "https://k.example.com", BearerToken: "abc", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), ServerName: "k"}},
		},
		"ExecPlugin": {
			data:    kubeconfig(`{server: "https://k"}`, `{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, "touch /tmp/pwned"]}}`),
			refused: []string{"an exec credential plugin"},
		},
		"AuthProvider": {
			data:    kubeconfig(`{server: "https://k"}`, `{auth-provider: {name: oidc, config: {idp-issuer-url: "https://x"}}}`),
			refused: []string{"an auth-provider plugin"},
		},
		"TokenFile": {
			data:    kubeconfig(`{server: "https://k"}`, `{tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}`),
			refused: []string{"tokenFile"},
		},
		"CertificateFiles": {
			data:    kubeconfig(`{server: "https://k", certificate-authority: /etc/ssl/ca.pem}`, `{client-certificate: /etc/crt, client-key: /etc/key}`),
			refused: []string{"certificate-authority (a file path)", "client-certificate (a file path)", "client-key (a file path)"},
		},
		"ProxyAndImpersonation": {
			data:    kubeconfig(`{server: "https://k", proxy-url: "http://10.9.9.9:3128"}`, `{token: t, as: system:admin}`),
			refused: []string{"proxy-url", "impersonation"},
		},
		"NotAURL": {
			data:    kubeconfig(`{server: "unix:///var/run/docker.sock"}`, `{token: t}`),
			refused: []string{"not an http(s) URL"},
		},
		"NoContext": {
			data:    []byte("apiVersion: v1\nkind: Config\nclusters: []\n"),
			refused: []string{"no current-context"},
		},
		"Garbage": {
			data:    []byte("{{{"),
			refused: []string{errParseKubeconfig},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tenantRESTConfig(tc.data)
			if len(tc.refused) > 0 {
				if err == nil {
					t.Fatalf("tenantRESTConfig(...): accepted %+v, want it refused", got)
				}
				for _, s := range tc.refused {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Timeout, tc.want.QPS, tc.want.Burst, tc.want.UserAgent = remoteTimeout, remoteQPS, remoteBurst, "provider-stackservices"
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tenantRESTConfig(...): -want, +got:\n%s", diff)
			}
		})
	}
}
