package securitygroupattachment

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errFmtKubeconfigRefused = "the kubeconfig of spec.forProvider.kubeconfigSecretRef is refused: %s. A tenant's kubeconfig may hold only a server URL with inline CA data and inline credentials (client certificate and key data, a token, or a username and password)"

	// remoteTimeout bounds every request to a workload cluster: a server a tenant names must
	// not hold one of the provider's workers for long.
	remoteTimeout = 15 * time.Second
	remoteQPS     = 5
	remoteBurst   = 10
)

// tenantRESTConfig turns a kubeconfig a tenant supplied into a client configuration, taking
// from it only what cannot run code or read the provider's files: the server URL, inline CA
// data, inline credentials and TLS settings. Everything else (exec and auth-provider plugins,
// token and certificate files, a proxy, impersonation) is refused, naming what was found,
// rather than ignored: a kubeconfig that relies on it would not work anyway, and the tenant
// learns why.
//
// The configuration is built field by field instead of through clientcmd's ClientConfig, so
// that whatever a future client-go adds to kubeconfigs is left out until it is looked at here.
func tenantRESTConfig(data []byte) (*rest.Config, error) {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, errors.Wrap(err, errParseKubeconfig)
	}
	ctxName := kc.CurrentContext
	if ctxName == "" && len(kc.Contexts) == 1 {
		for n := range kc.Contexts {
			ctxName = n
		}
	}
	c, ok := kc.Contexts[ctxName]
	if !ok || c == nil {
		return nil, errors.Errorf(errFmtKubeconfigRefused, fmt.Sprintf("it has no current-context (or the context %q does not exist)", ctxName))
	}
	cluster, ok := kc.Clusters[c.Cluster]
	if !ok || cluster == nil {
		return nil, errors.Errorf(errFmtKubeconfigRefused, fmt.Sprintf("the context %q names the cluster %q, which it does not define", ctxName, c.Cluster))
	}
	user := kc.AuthInfos[c.AuthInfo]
	if user == nil {
		user = &clientcmdapi.AuthInfo{}
	}
	if refused := refusedSettings(cluster, user); len(refused) > 0 {
		return nil, errors.Errorf(errFmtKubeconfigRefused, "it uses "+strings.Join(refused, ", "))
	}
	u, err := url.Parse(cluster.Server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.Errorf(errFmtKubeconfigRefused, fmt.Sprintf("the server %q is not an http(s) URL", cluster.Server))
	}
	return &rest.Config{
		Host: cluster.Server,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   cluster.InsecureSkipTLSVerify,
			ServerName: cluster.TLSServerName,
			CAData:     cluster.CertificateAuthorityData,
			CertData:   user.ClientCertificateData,
			KeyData:    user.ClientKeyData,
		},
		BearerToken: user.Token,
		Username:    user.Username,
		Password:    user.Password,
		Timeout:     remoteTimeout,
		QPS:         remoteQPS,
		Burst:       remoteBurst,
		UserAgent:   "provider-stackservices",
	}, nil
}

// refusedSettings lists, by their kubeconfig names, the settings of the cluster and user that
// would run a program, read a file of the provider's host, or send the provider's requests
// elsewhere or as someone else.
func refusedSettings(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) []string {
	var refused []string
	add := func(set bool, name string) {
		if set {
			refused = append(refused, name)
		}
	}
	add(c.CertificateAuthority != "", "certificate-authority (a file path)")
	add(c.ProxyURL != "", "proxy-url")
	add(u.Exec != nil, "an exec credential plugin")
	add(u.AuthProvider != nil, "an auth-provider plugin")
	add(u.TokenFile != "", "tokenFile (a file path)")
	add(u.ClientCertificate != "", "client-certificate (a file path)")
	add(u.ClientKey != "", "client-key (a file path)")
	add(u.Impersonate != "" || u.ImpersonateUID != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateUserExtra) > 0, "impersonation")
	return refused
}
