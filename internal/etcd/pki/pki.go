// Package pki is the certificate authority of an etcd cluster the provider runs. Each cluster
// has its own CA: it signs the members' certificates, which serve clients and peers and
// authenticate a member to its peers, and the client certificate the provider uses. etcd runs
// with client and peer certificate authentication, so a certificate signed by another
// cluster's CA opens nothing here.
//
// Keys are ECDSA P-256: small, fast to generate in a reconcile, and accepted by every etcd and
// Go TLS stack the provider meets.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"slices"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errGenerateKey   = "cannot generate a private key"
	errMarshalKey    = "cannot encode the private key"
	errSerial        = "cannot generate a certificate serial number"
	errCreateCert    = "cannot create the certificate"
	errParseCert     = "cannot parse the certificate"
	errParseKey      = "cannot parse the private key"
	errNoCertPEM     = "no CERTIFICATE PEM block found"
	errNoKeyPEM      = "no private key PEM block found"
	errNotSigner     = "the private key cannot sign"
	errKeyMismatch   = "the private key does not belong to the CA certificate"
	errNotCA         = "the certificate is not a certificate authority"
	errNoCertSign    = "the CA certificate may not sign certificates"
	errValidity      = "the validity must be positive"
	errCAExpired     = "the CA certificate has expired"
	errKeyPair       = "cannot load the client certificate and key"
	errNotClientCert = "the certificate is not for client authentication"
)

// ClockSkew is how far back NotBefore is set: the hosts of a cluster and the provider do not
// share a clock, and a certificate that a member sees as not yet valid would fail the
// handshake of a member that has just been created.
const ClockSkew = 5 * time.Minute

// PEM block types. Keys are PKCS #8, which tls.X509KeyPair and etcd read for every key type.
const (
	pemCertificate = "CERTIFICATE"
	pemPrivateKey  = "PRIVATE KEY"
)

// A CA signs the certificates of one etcd cluster.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer

	// CertPEM and KeyPEM are what LoadCA reads back; they are kept so that the CA can be
	// stored without encoding it again.
	CertPEM, KeyPEM []byte
}

// Issued is a certificate and its key, signed by a CA.
type Issued struct {
	CertPEM, KeyPEM []byte
	// NotAfter is when the certificate expires, so that the caller can plan its renewal
	// without parsing it.
	NotAfter time.Time
}

// NewCA creates a self-signed CA valid for validity from now. MaxPathLen 0: the CA signs leaves
// only, never another CA.
func NewCA(commonName string, validity time.Duration, now time.Time) (*CA, error) {
	if validity <= 0 {
		return nil, errors.New(errValidity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, errors.Wrap(err, errGenerateKey)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-ClockSkew),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, errors.Wrap(err, errCreateCert)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errors.Wrap(err, errParseCert)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

// LoadCA reads a CA back from its PEM encoding. It refuses a key that does not match the
// certificate and a certificate that is not a CA: either would only surface later, as
// members that cannot talk to each other.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, err
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return nil, errors.New(errNotCA)
	}
	if cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New(errNoCertSign)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, errors.New(errKeyMismatch)
	}
	return &CA{
		Cert:    cert,
		Key:     key,
		CertPEM: slices.Clone(certPEM),
		KeyPEM:  slices.Clone(keyPEM),
	}, nil
}

// NotAfter is when the first certificate of certPEM expires.
func NotAfter(certPEM []byte) (time.Time, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return time.Time{}, err
	}
	return cert.NotAfter, nil
}
