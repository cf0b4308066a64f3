package openstack

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"sort"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errParseCredentials = "cannot parse the credentials as a clouds.yaml entry"
	errNoAuthURL        = "the clouds.yaml entry has no auth.auth_url"
	errNoSecret         = "the clouds.yaml entry has neither a username and password nor an application credential id and secret" //nolint:gosec // A message, not a credential.
	errCACert           = "cannot use cacert: it must be a PEM certificate bundle"
	errCACertPath       = "cacert names a file, which only a ClusterProviderConfig may do; put the PEM bundle itself in the Secret"
	errFmtNoCloud       = "the clouds.yaml has no cloud named %q (it has: %s)"
	errFmtPickCloud     = "the clouds.yaml has several clouds (%s): set spec.cloud in the ProviderConfig to pick one"
)

// cloudEntry is one entry of a clouds.yaml, written the way OpenStack users already write it.
// Only the keys the provider can honour are read.
type cloudEntry struct {
	Auth struct {
		AuthURL                     string `json:"auth_url"`
		Username                    string `json:"username"`
		UserID                      string `json:"user_id"`
		Password                    string `json:"password"`
		ProjectName                 string `json:"project_name"`
		ProjectID                   string `json:"project_id"`
		ProjectDomainName           string `json:"project_domain_name"`
		ProjectDomainID             string `json:"project_domain_id"`
		UserDomainName              string `json:"user_domain_name"`
		UserDomainID                string `json:"user_domain_id"`
		DomainName                  string `json:"domain_name"`
		DomainID                    string `json:"domain_id"`
		ApplicationCredentialID     string `json:"application_credential_id"`
		ApplicationCredentialName   string `json:"application_credential_name"`
		ApplicationCredentialSecret string `json:"application_credential_secret"`
	} `json:"auth"`
	RegionName string `json:"region_name"`
	Interface  string `json:"interface"`
	// Verify is the clouds.yaml spelling; Insecure the one of the openstack CLI flags. Either
	// turns certificate verification off.
	Verify   *bool  `json:"verify"`
	Insecure *bool  `json:"insecure"`
	CACert   string `json:"cacert"`
}

// Cloud is everything needed to open a session with one OpenStack cloud.
type Cloud struct {
	Auth     gophercloud.AuthOptions
	Endpoint gophercloud.EndpointOpts
	TLS      *tls.Config
	// S3 comes from the ProviderConfig, not the clouds.yaml.
	S3 S3Settings
}

// ParseOptions tune how credentials are read.
type ParseOptions struct {
	// Cloud picks an entry of a clouds.yaml with several clouds.
	Cloud string
	// Region overrides the entry's region_name.
	Region string
	// AllowFiles lets cacert name a file on the provider's filesystem. Only trusted
	// (cluster-scoped) configs may, or a tenant could make the provider read its files.
	AllowFiles bool
}

// ParseCredentials reads either a single clouds.yaml entry or a whole clouds.yaml (with a
// top-level `clouds:` map) and returns the cloud it describes.
func ParseCredentials(data []byte, o ParseOptions) (*Cloud, error) {
	var doc struct {
		Clouds map[string]cloudEntry `json:"clouds"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, errors.Wrap(err, errParseCredentials)
	}
	var entry cloudEntry
	if doc.Clouds == nil {
		if err := yaml.Unmarshal(data, &entry); err != nil {
			return nil, errors.Wrap(err, errParseCredentials)
		}
	} else {
		e, err := pickCloud(doc.Clouds, o.Cloud)
		if err != nil {
			return nil, err
		}
		entry = e
	}
	return entry.toCloud(o)
}

func pickCloud(clouds map[string]cloudEntry, name string) (cloudEntry, error) {
	names := make([]string, 0, len(clouds))
	for n := range clouds {
		names = append(names, n)
	}
	sort.Strings(names)
	if name != "" {
		e, ok := clouds[name]
		if !ok {
			return cloudEntry{}, errors.Errorf(errFmtNoCloud, name, strings.Join(names, ", "))
		}
		return e, nil
	}
	if len(clouds) != 1 {
		return cloudEntry{}, errors.Errorf(errFmtPickCloud, strings.Join(names, ", "))
	}
	return clouds[names[0]], nil
}

func (e cloudEntry) toCloud(o ParseOptions) (*Cloud, error) {
	a := e.Auth
	if a.AuthURL == "" {
		return nil, errors.New(errNoAuthURL)
	}
	appCred := a.ApplicationCredentialSecret != "" && (a.ApplicationCredentialID != "" || a.ApplicationCredentialName != "")
	password := a.Password != "" && (a.Username != "" || a.UserID != "")
	if !appCred && !password {
		return nil, errors.New(errNoSecret)
	}

	c := &Cloud{
		Auth: gophercloud.AuthOptions{
			IdentityEndpoint: a.AuthURL,
			// Tokens expire; gophercloud re-authenticates with these options on a 401.
			AllowReauth: true,
		},
		Endpoint: gophercloud.EndpointOpts{
			Region:       first(o.Region, e.RegionName),
			Availability: availability(e.Interface),
		},
	}
	if appCred {
		// An application credential carries its own scope; adding a project would be refused.
		c.Auth.ApplicationCredentialID = a.ApplicationCredentialID
		c.Auth.ApplicationCredentialName = a.ApplicationCredentialName
		c.Auth.ApplicationCredentialSecret = a.ApplicationCredentialSecret
		c.Auth.UserID = a.UserID
		c.Auth.Username = a.Username
		c.Auth.DomainID = first(a.UserDomainID, a.DomainID)
		c.Auth.DomainName = first(a.UserDomainName, a.DomainName)
	} else {
		c.Auth.Username = a.Username
		c.Auth.UserID = a.UserID
		c.Auth.Password = a.Password
		c.Auth.DomainID = first(a.UserDomainID, a.DomainID)
		c.Auth.DomainName = first(a.UserDomainName, a.DomainName)
		switch {
		case a.ProjectID != "":
			c.Auth.Scope = &gophercloud.AuthScope{ProjectID: a.ProjectID}
		case a.ProjectName != "":
			c.Auth.Scope = &gophercloud.AuthScope{
				ProjectName: a.ProjectName,
				DomainID:    first(a.ProjectDomainID, a.DomainID),
				DomainName:  first(a.ProjectDomainName, a.DomainName),
			}
		}
	}

	t, err := e.tlsConfig(o.AllowFiles)
	if err != nil {
		return nil, err
	}
	c.TLS = t
	return c, nil
}

func (e cloudEntry) tlsConfig(allowFiles bool) (*tls.Config, error) {
	insecure := (e.Verify != nil && !*e.Verify) || (e.Insecure != nil && *e.Insecure)
	if e.CACert == "" && !insecure {
		return nil, nil //nolint:nilnil // No TLS settings of its own: the client's defaults apply.
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // The user asked for it in their clouds.yaml.
	if e.CACert == "" {
		return t, nil
	}
	pem := []byte(e.CACert)
	if !strings.Contains(e.CACert, "-----BEGIN") {
		if !allowFiles {
			return nil, errors.New(errCACertPath)
		}
		b, err := os.ReadFile(e.CACert)
		if err != nil {
			return nil, errors.Wrap(err, errCACert)
		}
		pem = b
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New(errCACert)
	}
	t.RootCAs = pool
	return t, nil
}

func availability(iface string) gophercloud.Availability {
	switch strings.TrimSuffix(strings.ToLower(iface), "url") {
	case "internal":
		return gophercloud.AvailabilityInternal
	case "admin":
		return gophercloud.AvailabilityAdmin
	default:
		return gophercloud.AvailabilityPublic
	}
}

func first(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
