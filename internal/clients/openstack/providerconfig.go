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
	ref := mg.GetProviderConfigReference()
	if ref == nil {
		return nil, errors.New(errNoProviderConfigRef)
	}
	if err := c.usage.Track(ctx, mg); err != nil {
		return nil, errors.Wrap(err, errTrackUsage)
	}

	var (
		key      string
		settings v1alpha1.CloudSettings
		creds    []byte
		trusted  bool
		version  string
	)
	switch ref.Kind {
	case v1alpha1.ProviderConfigKind:
		pc := &v1alpha1.ProviderConfig{}
		if err := c.kube.Get(ctx, types.NamespacedName{Namespace: mg.GetNamespace(), Name: ref.Name}, pc); err != nil {
			return nil, errors.Wrap(err, errGetProviderConfig)
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
		data, err := resource.CommonCredentialExtractor(ctx, cd.Source, c.kube, sel)
		if err != nil {
			return nil, errors.Wrap(err, errGetCredentials)
		}
		key = "ProviderConfig/" + pc.Namespace + "/" + pc.Name
		settings, creds, version = pc.Spec.CloudSettings, data, strconv.FormatInt(pc.Generation, 10)
	case v1alpha1.ClusterProviderConfigKind:
		pc := &v1alpha1.ClusterProviderConfig{}
		if err := c.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, pc); err != nil {
			return nil, errors.Wrap(err, errGetClusterConfig)
		}
		cd := pc.Spec.Credentials
		data, err := resource.CommonCredentialExtractor(ctx, cd.Source, c.kube, cd.CommonCredentialSelectors)
		if err != nil {
			return nil, errors.Wrap(err, errGetCredentials)
		}
		key = "ClusterProviderConfig/" + pc.Name
		settings, creds, version, trusted = pc.Spec.CloudSettings, data, strconv.FormatInt(pc.Generation, 10), true
	default:
		return nil, errors.Errorf(errFmtUnknownKind, ref.Kind)
	}

	var s3 S3Settings
	if o := settings.ObjectStorage; o != nil {
		s3 = S3Settings{Endpoint: o.Endpoint, Region: o.Region}
	}
	fp := Fingerprint([]byte(version), []byte(settings.Cloud), []byte(settings.Region), []byte(s3.Endpoint), []byte(s3.Region), creds)
	return c.sessions.Get(ctx, key, fp, func() (*Cloud, error) {
		cloud, err := ParseCredentials(creds, ParseOptions{Cloud: settings.Cloud, Region: settings.Region, AllowFiles: trusted})
		if err != nil {
			return nil, err
		}
		cloud.S3 = s3
		return cloud, nil
	})
}
