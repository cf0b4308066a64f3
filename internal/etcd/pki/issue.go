package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"slices"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// IssueMember issues the certificate of the member name, used both to serve clients and peers
// and to authenticate to peers (etcd presents its peer certificate as a client certificate).
// Besides ips, it is valid for 127.0.0.1 and localhost, which the member's own tools (etcdctl
// on the host, health probes) use.
func (ca *CA) IssueMember(name string, ips []net.IP, validity time.Duration, now time.Time) (Issued, error) {
	sans := make([]net.IP, 0, len(ips)+1)
	for _, ip := range append(slices.Clone(ips), net.IPv4(127, 0, 0, 1)) {
		if !slices.ContainsFunc(sans, ip.Equal) {
			sans = append(sans, ip)
		}
	}
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		IPAddresses: sans,
		DNSNames:    []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, validity, now)
}

// IssueClient issues a certificate that authenticates a client to the cluster's members, and
// that no member accepts as a server certificate.
func (ca *CA) IssueClient(commonName string, validity time.Duration, now time.Time) (Issued, error) {
	return ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, validity, now)
}

// issue completes tmpl and signs it. A leaf never outlives the CA: past the CA's NotAfter it
// would not verify anyway, and clipping it makes Issued.NotAfter the date that matters for
// renewal.
func (ca *CA) issue(tmpl *x509.Certificate, validity time.Duration, now time.Time) (Issued, error) {
	if validity <= 0 {
		return Issued{}, errors.New(errValidity)
	}
	if !now.Before(ca.Cert.NotAfter) {
		return Issued{}, errors.New(errCAExpired)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Issued{}, errors.Wrap(err, errGenerateKey)
	}
	serial, err := newSerial()
	if err != nil {
		return Issued{}, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-ClockSkew)
	tmpl.NotAfter = now.Add(validity)
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true

	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return Issued{}, errors.Wrap(err, errCreateCert)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Issued{}, errors.Wrap(err, errParseCert)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return Issued{}, err
	}
	return Issued{CertPEM: encodeCert(der), KeyPEM: keyPEM, NotAfter: cert.NotAfter}, nil
}

// TLSConfig is the configuration of a client that presents client and trusts only this CA:
// not the system roots, so that nothing but a member of this cluster can answer.
func (ca *CA) TLSConfig(client Issued) (*tls.Config, error) {
	pair, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
	if err != nil {
		return nil, errors.Wrap(err, errKeyPair)
	}
	if pair.Leaf == nil { // GODEBUG=x509keypairleaf=0
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, errors.Wrap(err, errParseCert)
		}
	}
	if !slices.Contains(pair.Leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return nil, errors.New(errNotClientCert)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		RootCAs:      roots,
		Certificates: []tls.Certificate{pair},
	}, nil
}
