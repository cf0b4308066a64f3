package openstack

import (
	"context"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/v1alpha1"
)

const (
	errNoProviderConfigRef = "the managed resource has no spec.providerConfigRef"
	errTrackUsage          = "cannot track ProviderConfig usage"
	errGetProviderConfig   = "cannot get the ProviderConfig"
	errGetClusterConfig    = "cannot get the ClusterProviderConfig"
	errGetCredentials      = "cannot read the credentials the ProviderConfig references"
	errFmtUnknownKind      = "spec.providerConfigRef.kind must be ProviderConfig or ClusterProviderConfig, not %q"
)

// A SessionConnector returns the OpenStack session of a managed resource's ProviderConfig.
// Controllers depend on this rather than on Connector, so that tests can stand in for it.
type SessionConnector interface {
	Connect(ctx context.Context, mg resource.ModernManaged) (*Session, error)
}

var _ SessionConnector = &Connector{}

// A Connector turns the ProviderConfig a managed resource references into an authenticated
// Session. Every managed resource kind of the provider connects through it.
type Connector struct {
	kube     client.Client
	usage    resource.ModernTracker
	sessions *SessionCache
}

// NewConnector returns a Connector that reads configs and Secrets with kube, records usage
// with usage and reuses sessions from sessions.
func NewConnector(kube client.Client, usage resource.ModernTracker, sessions *SessionCache) *Connector {
	return &Connector{kube: kube, usage: usage, sessions: sessions}
}

// Connect returns the Session of the managed resource's ProviderConfig.
func (c *Connector) Connect(ctx context.Context, mg resource.ModernManaged) (*Session, error) {
	if mg.GetProviderConfigReference() == nil {
		return nil, errors.New(errNoProviderConfigRef)
	}
	if err := c.usage.Track(ctx, mg); err != nil {
		return nil, errors.Wrap(err, errTrackUsage)
	}
	pc, err := getConfig(ctx, c.kube, mg)
	if err != nil {
		return nil, err
	}
	creds, err := resource.CommonCredentialExtractor(ctx, pc.source, c.kube, pc.selectors)
	if err != nil {
		return nil, errors.Wrap(err, errGetCredentials)
	}

	settings := pc.settings
	var s3 S3Settings
	if o := settings.ObjectStorage; o != nil {
		s3 = S3Settings{Endpoint: o.Endpoint, Region: o.Region}
	}
	fp := Fingerprint([]byte(pc.version), []byte(settings.Cloud), []byte(settings.Region), []byte(s3.Endpoint), []byte(s3.Region), creds)
	return c.sessions.Get(ctx, pc.key, fp, func() (*Cloud, error) {
		cloud, err := ParseCredentials(creds, ParseOptions{Cloud: settings.Cloud, Region: settings.Region, AllowFiles: pc.trusted})
		if err != nil {
			return nil, err
		}
		cloud.S3 = s3
		return cloud, nil
	})
}

// CloudSettingsOf returns the settings of the config the managed resource references,
// without reading its credentials.
func CloudSettingsOf(ctx context.Context, kube client.Reader, mg resource.ModernManaged) (v1alpha1.CloudSettings, error) {
	pc, err := getConfig(ctx, kube, mg)
	return pc.settings, err
}

// config is what a ProviderConfig or a ClusterProviderConfig says, whichever is referenced.
type config struct {
	// key names the config in the session cache; version is its generation.
	key, version string
	settings     v1alpha1.CloudSettings
	source       xpv2.CredentialsSource
	selectors    xpv2.CommonCredentialSelectors
	// trusted configs (the platform's) may read credentials from the provider's files.
	trusted bool
}

func getConfig(ctx context.Context, kube client.Reader, mg resource.ModernManaged) (config, error) {
	ref := mg.GetProviderConfigReference()
	if ref == nil {
		return config{}, errors.New(errNoProviderConfigRef)
	}
	switch ref.Kind {
	case v1alpha1.ProviderConfigKind:
		pc := &v1alpha1.ProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Namespace: mg.GetNamespace(), Name: ref.Name}, pc); err != nil {
			return config{}, errors.Wrap(err, errGetProviderConfig)
		}
		cd := pc.Spec.Credentials
		sel := xpv2.CommonCredentialSelectors{}
		if cd.SecretRef != nil {
			// A namespaced config reads only from its own namespace: the API has no field
			// to name another, and the namespace is filled in here, not by the user.
			sel.SecretRef = &xpv2.SecretKeySelector{
				SecretReference: xpv2.SecretReference{Name: cd.SecretRef.Name, Namespace: pc.Namespace},
				Key:             cd.SecretRef.Key,
			}
		}
		return config{
			key: "ProviderConfig/" + pc.Namespace + "/" + pc.Name, version: strconv.FormatInt(pc.Generation, 10),
			settings: pc.Spec.CloudSettings, source: cd.Source, selectors: sel,
		}, nil
	case v1alpha1.ClusterProviderConfigKind:
		pc := &v1alpha1.ClusterProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Name: ref.Name}, pc); err != nil {
			return config{}, errors.Wrap(err, errGetClusterConfig)
		}
		cd := pc.Spec.Credentials
		return config{
			key: "ClusterProviderConfig/" + pc.Name, version: strconv.FormatInt(pc.Generation, 10),
			settings: pc.Spec.CloudSettings, source: cd.Source, selectors: cd.CommonCredentialSelectors, trusted: true,
		}, nil
	default:
		return config{}, errors.Errorf(errFmtUnknownKind, ref.Kind)
	}
}
