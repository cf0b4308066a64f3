// Package authority keeps an EtcdCluster's certificate authority: the CA that signs its members'
// and clients' certificates, and the client certificate the provider (and the connection
// Secret) use, in a Secret next to the EtcdCluster. Every controller that talks to a cluster
// (the EtcdCluster's, the EtcdBackup's) reaches it through here.
package authority

import (
	"context"
	"crypto/tls"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/stackservices/provider-stackservices/apis/etcd/v1alpha1"
	"github.com/stackservices/provider-stackservices/internal/etcd/pki"
)

const (
	errGetCA    = "cannot get the cluster's CA Secret"
	errLoadCA   = "cannot read the cluster's CA from its Secret"
	errCreateCA = "cannot create the cluster's CA"
	errWriteCA  = "cannot write the cluster's CA Secret"
	errDeleteCA = "cannot delete the cluster's CA Secret"
	// ErrIssue is the error of a certificate that could not be issued.
	ErrIssue      = "cannot issue a certificate"
	errTLS        = "cannot build the client TLS configuration"
	errLoadClient = "cannot read the client certificate from the CA Secret"

	keyCACert     = "ca.crt"
	keyCAKey      = "ca.key"
	keyClientCert = "client.crt"
	keyClientKey  = "client.key"

	caValidity = 10 * 365 * 24 * time.Hour
	// clientName is the common name of the client certificate apps and the provider use.
	clientName = "root"
)

// An Authority is a cluster's CA and the client certificate issued from it, as kept in a
// Secret next to the EtcdCluster. The Secret is owned by the EtcdCluster, so it goes with it.
type Authority struct {
	CA     *pki.CA
	Client pki.Issued
}

// SecretName is the name of the cluster's CA Secret, in its namespace.
func SecretName(cr *v1alpha1.EtcdCluster) string { return cr.GetName() + "-etcd-ca" }

// TLSConfig is the configuration of a client of the cluster: the provider's client
// certificate, and the CA as the only root.
func (a *Authority) TLSConfig() (*tls.Config, error) {
	c, err := a.CA.TLSConfig(a.Client)
	return c, errors.Wrap(err, errTLS)
}

// Load reads the CA Secret; found is false when there is none.
func Load(ctx context.Context, kube client.Client, cr *v1alpha1.EtcdCluster) (a *Authority, found bool, err error) {
	s := &corev1.Secret{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: cr.GetNamespace(), Name: SecretName(cr)}, s); err != nil {
		if kerrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, errors.Wrap(err, errGetCA)
	}
	ca, err := pki.LoadCA(s.Data[keyCACert], s.Data[keyCAKey])
	if err != nil {
		return nil, true, errors.Wrap(err, errLoadCA)
	}
	notAfter, err := pki.NotAfter(s.Data[keyClientCert])
	if err != nil {
		return nil, true, errors.Wrap(err, errLoadClient)
	}
	return &Authority{CA: ca, Client: pki.Issued{CertPEM: s.Data[keyClientCert], KeyPEM: s.Data[keyClientKey], NotAfter: notAfter}}, true, nil
}

// Ensure returns the cluster's CA, creating it (and its Secret) the first time.
func Ensure(ctx context.Context, kube client.Client, cr *v1alpha1.EtcdCluster, validity time.Duration, now time.Time) (*Authority, error) {
	a, found, err := Load(ctx, kube, cr)
	if err != nil || found {
		return a, err
	}
	ca, err := pki.NewCA(cr.GetNamespace()+"/"+cr.GetName()+" etcd CA", caValidity, now)
	if err != nil {
		return nil, errors.Wrap(err, errCreateCA)
	}
	a = &Authority{CA: ca}
	if a.Client, err = ca.IssueClient(clientName, validity, now); err != nil {
		return nil, errors.Wrap(err, ErrIssue)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cr.GetNamespace(),
			Name:      SecretName(cr),
			Labels:    map[string]string{"etcd.m.stackservices.io/cluster": cr.GetName()},
			// Owned, so that it goes with the EtcdCluster even if the provider misses the delete.
			OwnerReferences: []metav1.OwnerReference{meta.AsOwner(meta.TypedReferenceTo(cr, v1alpha1.EtcdClusterGroupVersionKind))},
		},
		Type: corev1.SecretTypeOpaque,
		Data: a.secretData(),
	}
	if err := kube.Create(ctx, s); err != nil {
		if kerrors.IsAlreadyExists(err) {
			// Another reconcile made it first: use that one, never a second CA.
			a, _, err = Load(ctx, kube, cr)
			return a, err
		}
		return nil, errors.Wrap(err, errWriteCA)
	}
	return a, nil
}

// RenewClient replaces the client certificate in the CA Secret.
func RenewClient(ctx context.Context, kube client.Client, cr *v1alpha1.EtcdCluster, a *Authority, validity time.Duration, now time.Time) error {
	issued, err := a.CA.IssueClient(clientName, validity, now)
	if err != nil {
		return errors.Wrap(err, ErrIssue)
	}
	s := &corev1.Secret{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: cr.GetNamespace(), Name: SecretName(cr)}, s); err != nil {
		return errors.Wrap(err, errGetCA)
	}
	a.Client = issued
	s.Data = a.secretData()
	return errors.Wrap(kube.Update(ctx, s), errWriteCA)
}

// Delete deletes the CA Secret.
func Delete(ctx context.Context, kube client.Client, cr *v1alpha1.EtcdCluster) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cr.GetNamespace(), Name: SecretName(cr)}}
	err := kube.Delete(ctx, s, &client.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	return errors.Wrap(client.IgnoreNotFound(err), errDeleteCA)
}

func (a *Authority) secretData() map[string][]byte {
	return map[string][]byte{
		keyCACert:     a.CA.CertPEM,
		keyCAKey:      a.CA.KeyPEM,
		keyClientCert: a.Client.CertPEM,
		keyClientKey:  a.Client.KeyPEM,
	}
}
