package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTLSConfig runs a handshake between a member, which requires a client certificate of its
// CA as etcd does with --client-cert-auth, and a client configured by TLSConfig.
func TestTLSConfig(t *testing.T) {
	ca, err := NewCA("etcd-ca", time.Hour, time.Now())
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	other, err := NewCA("etcd-ca", time.Hour, time.Now())
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	issue := func(ca *CA, member bool) Issued {
		var is Issued
		var err error
		if member {
			is, err = ca.IssueMember("m1", nil, time.Hour, time.Now())
		} else {
			is, err = ca.IssueClient("provider", time.Hour, time.Now())
		}
		if err != nil {
			t.Fatalf("issue: %v", err)
		}
		return is
	}
	serverConfig := func(ca *CA) *tls.Config {
		m := issue(ca, true)
		pair, err := tls.X509KeyPair(m.CertPEM, m.KeyPEM)
		if err != nil {
			t.Fatalf("X509KeyPair: %v", err)
		}
		clientCAs := x509.NewCertPool()
		clientCAs.AddCert(ca.Cert)
		return &tls.Config{
			Certificates: []tls.Certificate{pair},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    clientCAs,
			MinVersion:   tls.VersionTLS12,
		}
	}

	cases := map[string]struct {
		reason   string
		serverCA *CA
		clientCA *CA
		client   Issued
		// configErr: TLSConfig refuses; ok: the handshake succeeds.
		configErr, ok bool
	}{
		"OwnCA": {
			reason:   "A client certificate of the member's CA is accepted, and the member trusted.",
			serverCA: ca, clientCA: ca, client: issue(ca, false), ok: true,
		},
		"ClientOfAnotherCA": {
			reason:   "The member refuses a client certificate of another CA.",
			serverCA: ca, clientCA: other, client: issue(other, false),
		},
		"MemberOfAnotherCA": {
			reason:   "The client does not trust a member of another cluster.",
			serverCA: other, clientCA: ca, client: issue(ca, false),
		},
		"NoClientUsage": {
			reason:   "TLSConfig wants a certificate for client authentication; a CA certificate is none.",
			serverCA: ca, clientCA: ca, client: Issued{CertPEM: other.CertPEM, KeyPEM: other.KeyPEM},
			configErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := tc.clientCA.TLSConfig(tc.client)
			if diff := cmp.Diff(tc.configErr, err != nil); diff != "" {
				t.Fatalf("%s\nTLSConfig(...): -want error, +got error:\n%s\n%v", tc.reason, diff, err)
			}
			if err != nil {
				return
			}
			if cfg.MinVersion != tls.VersionTLS12 {
				t.Errorf("MinVersion = %x, want TLS 1.2", cfg.MinVersion)
			}
			cfg.ServerName = "127.0.0.1"
			err = handshake(cfg, serverConfig(tc.serverCA))
			if diff := cmp.Diff(tc.ok, err == nil); diff != "" {
				t.Errorf("%s\nhandshake: -want ok, +got ok:\n%s\n%v", tc.reason, diff, err)
			}
		})
	}
}

// handshake runs a TLS handshake over an in-memory connection and returns the first error of
// either side.
func handshake(client, server *tls.Config) error {
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	errc := make(chan error, 1)
	go func() {
		sc := tls.Server(s, server)
		err := sc.Handshake()
		if err == nil {
			// TLS 1.3 servers learn of a refused client certificate only on the next read.
			_, err = sc.Write([]byte{1})
		}
		s.Close()
		errc <- err
	}()
	cc := tls.Client(c, client)
	err := cc.Handshake()
	if err == nil {
		_, err = cc.Read(make([]byte, 1))
	}
	c.Close()
	if serr := <-errc; err == nil {
		err = serr
	}
	return err
}
