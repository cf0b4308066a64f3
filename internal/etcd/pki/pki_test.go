package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

// now is fixed, and whole seconds: certificates store their validity with second precision.
var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func newCA(t *testing.T, validity time.Duration) *CA {
	t.Helper()
	ca, err := NewCA("etcd-ca", validity, now)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	if b == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatalf("ParseCertificate: %v", err)
	}
	return c
}

func TestNewCA(t *testing.T) {
	ca := newCA(t, 24*time.Hour)
	type props struct {
		CommonName                string
		IsCA, MaxPathLenZero      bool
		MaxPathLen                int
		KeyUsage                  x509.KeyUsage
		NotBefore, NotAfter       time.Time
		SerialBits                int
		SelfSigned, HasSubjectKey bool
	}
	c := parse(t, ca.CertPEM)
	got := props{
		CommonName:     c.Subject.CommonName,
		IsCA:           c.IsCA,
		MaxPathLenZero: c.MaxPathLenZero,
		MaxPathLen:     c.MaxPathLen,
		KeyUsage:       c.KeyUsage,
		NotBefore:      c.NotBefore,
		NotAfter:       c.NotAfter,
		SerialBits:     c.SerialNumber.BitLen(),
		SelfSigned:     c.CheckSignatureFrom(c) == nil,
		HasSubjectKey:  len(c.SubjectKeyId) > 0,
	}
	want := props{
		CommonName:     "etcd-ca",
		IsCA:           true,
		MaxPathLenZero: true,
		KeyUsage:       x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		NotBefore:      now.Add(-5 * time.Minute),
		NotAfter:       now.Add(24 * time.Hour),
		SelfSigned:     true,
		HasSubjectKey:  true,
	}
	// A random 128-bit serial has fewer bits only when its top bits happen to be zero.
	if got.SerialBits < 96 || got.SerialBits > 128 {
		t.Errorf("serial has %d bits, want about 128", got.SerialBits)
	}
	got.SerialBits = 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewCA(...): -want, +got:\n%s", diff)
	}
	if _, ok := ca.Key.Public().(*ecdsa.PublicKey); !ok {
		t.Errorf("NewCA(...): key is %T, want ECDSA", ca.Key.Public())
	}
	if _, err := NewCA("etcd-ca", 0, now); err == nil {
		t.Error("NewCA(validity 0): want an error")
	}
}

func TestLoadCA(t *testing.T) {
	ca := newCA(t, 24*time.Hour)
	other := newCA(t, 24*time.Hour)
	member, err := ca.IssueMember("m1", nil, time.Hour, now)
	if err != nil {
		t.Fatalf("IssueMember: %v", err)
	}
	sec1 := func() []byte {
		der, err := x509.MarshalECPrivateKey(ca.Key.(*ecdsa.PrivateKey))
		if err != nil {
			t.Fatalf("MarshalECPrivateKey: %v", err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}()

	cases := map[string]struct {
		reason          string
		certPEM, keyPEM []byte
		want            error
	}{
		"RoundTrip": {
			reason:  "What NewCA encodes, LoadCA reads back.",
			certPEM: ca.CertPEM, keyPEM: ca.KeyPEM,
		},
		"SEC1Key": {
			reason:  "A CA made by other tools often stores its key as an EC PRIVATE KEY.",
			certPEM: ca.CertPEM, keyPEM: sec1,
		},
		"KeyOfAnotherCA": {
			reason:  "A key that does not match the certificate would sign certificates nobody verifies.",
			certPEM: ca.CertPEM, keyPEM: other.KeyPEM,
			want: errors.New(errKeyMismatch),
		},
		"NotACA": {
			reason:  "A leaf certificate cannot sign certificates.",
			certPEM: member.CertPEM, keyPEM: member.KeyPEM,
			want: errors.New(errNotCA),
		},
		"NoCertificate": {
			reason:  "Garbage is no certificate.",
			certPEM: []byte("garbage"), keyPEM: ca.KeyPEM,
			want: errors.New(errNoCertPEM),
		},
		"KeyAsCertificate": {
			reason:  "A key is no certificate.",
			certPEM: ca.KeyPEM, keyPEM: ca.KeyPEM,
			want: errors.New(errNoCertPEM),
		},
		"NoKey": {
			reason:  "A certificate is no key.",
			certPEM: ca.CertPEM, keyPEM: ca.CertPEM,
			want: errors.New(errNoKeyPEM),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := LoadCA(tc.certPEM, tc.keyPEM)
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Fatalf("%s\nLoadCA(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(ca.Cert.Raw, got.Cert.Raw); diff != "" {
				t.Errorf("%s\nLoadCA(...).Cert: -want, +got:\n%s", tc.reason, diff)
			}
			// The loaded key signs what the certificate verifies.
			digest := sha256.Sum256([]byte("etcd"))
			sig, err := got.Key.Sign(rand.Reader, digest[:], crypto.SHA256)
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			if !ecdsa.VerifyASN1(got.Cert.PublicKey.(*ecdsa.PublicKey), digest[:], sig) {
				t.Errorf("%s\nthe loaded key does not sign for the loaded certificate", tc.reason)
			}
			// And the loaded CA issues certificates that verify against the original.
			is, err := got.IssueClient("provider", time.Hour, now)
			if err != nil {
				t.Fatalf("IssueClient: %v", err)
			}
			if err := parse(t, is.CertPEM).CheckSignatureFrom(ca.Cert); err != nil {
				t.Errorf("%s\nissued certificate does not verify: %v", tc.reason, err)
			}
		})
	}
}

func TestNotAfterRefusesGarbage(t *testing.T) {
	if _, err := NotAfter([]byte("garbage")); err == nil {
		t.Error("NotAfter(garbage): want an error")
	}
}
