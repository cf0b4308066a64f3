package pki

import (
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

func TestVerify(t *testing.T) {
	ca := newCA(t, 24*time.Hour)
	member, err := ca.IssueMember("m1", []net.IP{net.ParseIP("10.0.0.7")}, time.Hour, now)
	if err != nil {
		t.Fatalf("IssueMember: %v", err)
	}
	client, err := ca.IssueClient("provider", time.Hour, now)
	if err != nil {
		t.Fatalf("IssueClient: %v", err)
	}
	other := newCA(t, 24*time.Hour)

	cases := map[string]struct {
		reason   string
		certPEM  []byte
		roots    *CA
		host     string
		usage    x509.ExtKeyUsage
		at       time.Time
		verifies bool
	}{
		"MemberServesItsIP": {
			reason:  "A member certificate must serve clients and peers at the member's address.",
			certPEM: member.CertPEM, roots: ca, host: "10.0.0.7",
			usage: x509.ExtKeyUsageServerAuth, at: now, verifies: true,
		},
		"MemberServesLoopback": {
			reason:  "Tools on the member's host reach it at 127.0.0.1.",
			certPEM: member.CertPEM, roots: ca, host: "127.0.0.1",
			usage: x509.ExtKeyUsageServerAuth, at: now, verifies: true,
		},
		"MemberServesLocalhost": {
			reason:  "Tools on the member's host reach it at localhost.",
			certPEM: member.CertPEM, roots: ca, host: "localhost",
			usage: x509.ExtKeyUsageServerAuth, at: now, verifies: true,
		},
		"MemberDoesNotServeAnotherIP": {
			reason:  "A member certificate must not serve another member's address.",
			certPEM: member.CertPEM, roots: ca, host: "10.0.0.8",
			usage: x509.ExtKeyUsageServerAuth, at: now,
		},
		"MemberAuthenticatesAsClient": {
			reason:  "etcd presents the peer certificate as a client certificate to its peers.",
			certPEM: member.CertPEM, roots: ca,
			usage: x509.ExtKeyUsageClientAuth, at: now, verifies: true,
		},
		"MemberValidDespiteSkew": {
			reason:  "A host whose clock lags a little behind must accept a fresh certificate.",
			certPEM: member.CertPEM, roots: ca, host: "10.0.0.7",
			usage: x509.ExtKeyUsageServerAuth, at: now.Add(-4 * time.Minute), verifies: true,
		},
		"MemberExpired": {
			reason:  "A member certificate expires after its validity.",
			certPEM: member.CertPEM, roots: ca, host: "10.0.0.7",
			usage: x509.ExtKeyUsageServerAuth, at: now.Add(2 * time.Hour),
		},
		"ClientAuthenticates": {
			reason:  "The client certificate must authenticate to the members.",
			certPEM: client.CertPEM, roots: ca,
			usage: x509.ExtKeyUsageClientAuth, at: now, verifies: true,
		},
		"ClientDoesNotServe": {
			reason:  "A client certificate must not let its holder pose as a member.",
			certPEM: client.CertPEM, roots: ca,
			usage: x509.ExtKeyUsageServerAuth, at: now,
		},
		"OtherCA": {
			reason:  "A certificate of one cluster must not open another cluster.",
			certPEM: client.CertPEM, roots: other,
			usage: x509.ExtKeyUsageClientAuth, at: now,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			roots := x509.NewCertPool()
			roots.AddCert(tc.roots.Cert)
			_, err := parse(t, tc.certPEM).Verify(x509.VerifyOptions{
				Roots:       roots,
				DNSName:     tc.host,
				KeyUsages:   []x509.ExtKeyUsage{tc.usage},
				CurrentTime: tc.at,
			})
			if diff := cmp.Diff(tc.verifies, err == nil); diff != "" {
				t.Errorf("%s\nVerify(...): -want verifies, +got verifies:\n%s\nerror: %v", tc.reason, diff, err)
			}
		})
	}
}

func TestMemberSANs(t *testing.T) {
	ca := newCA(t, 24*time.Hour)
	cases := map[string]struct {
		ips     []net.IP
		wantIPs []string
	}{
		"AddsLoopback": {
			ips:     []net.IP{net.ParseIP("10.0.0.7")},
			wantIPs: []string{"10.0.0.7", "127.0.0.1"},
		},
		"NoDuplicateLoopback": {
			ips:     []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("fd00::7")},
			wantIPs: []string{"127.0.0.1", "fd00::7"},
		},
		"NoIPs": {
			wantIPs: []string{"127.0.0.1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			is, err := ca.IssueMember("m1", tc.ips, time.Hour, now)
			if err != nil {
				t.Fatalf("IssueMember: %v", err)
			}
			c := parse(t, is.CertPEM)
			var ips []string
			for _, ip := range c.IPAddresses {
				ips = append(ips, ip.String())
			}
			if diff := cmp.Diff(tc.wantIPs, ips); diff != "" {
				t.Errorf("IPAddresses: -want, +got:\n%s", diff)
			}
			if diff := cmp.Diff([]string{"localhost"}, c.DNSNames); diff != "" {
				t.Errorf("DNSNames: -want, +got:\n%s", diff)
			}
			if diff := cmp.Diff("m1", c.Subject.CommonName); diff != "" {
				t.Errorf("CommonName: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestValidity(t *testing.T) {
	ca := newCA(t, 24*time.Hour)
	member := func(v time.Duration, at time.Time) (Issued, error) {
		return ca.IssueMember("m1", nil, v, at)
	}
	client := func(v time.Duration, at time.Time) (Issued, error) {
		return ca.IssueClient("provider", v, at)
	}
	type want struct {
		notBefore, notAfter time.Time
		err                 error
	}
	cases := map[string]struct {
		reason   string
		issue    func(time.Duration, time.Time) (Issued, error)
		validity time.Duration
		at       time.Time
		want     want
	}{
		"MemberWithinCA": {
			reason: "A leaf that expires before the CA keeps its validity.",
			issue:  member, validity: time.Hour, at: now,
			want: want{notBefore: now.Add(-5 * time.Minute), notAfter: now.Add(time.Hour)},
		},
		"MemberClipped": {
			reason: "A leaf never outlives the CA.",
			issue:  member, validity: 48 * time.Hour, at: now,
			want: want{notBefore: now.Add(-5 * time.Minute), notAfter: now.Add(24 * time.Hour)},
		},
		"ClientClipped": {
			reason: "A client certificate never outlives the CA either.",
			issue:  client, validity: 48 * time.Hour, at: now.Add(time.Hour),
			want: want{notBefore: now.Add(55 * time.Minute), notAfter: now.Add(24 * time.Hour)},
		},
		"CAExpired": {
			reason: "An expired CA issues nothing: nobody would accept what it signs.",
			issue:  client, validity: time.Hour, at: now.Add(24 * time.Hour),
			want: want{err: errors.New(errCAExpired)},
		},
		"NoValidity": {
			reason: "A certificate needs a positive validity.",
			issue:  member, validity: 0, at: now,
			want: want{err: errors.New(errValidity)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			is, err := tc.issue(tc.validity, tc.at)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Fatalf("%s\nissue(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if err != nil {
				return
			}
			c := parse(t, is.CertPEM)
			got := want{notBefore: c.NotBefore, notAfter: c.NotAfter}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nissue(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.notAfter, is.NotAfter); diff != "" {
				t.Errorf("%s\nIssued.NotAfter: -want, +got:\n%s", tc.reason, diff)
			}
			na, err := NotAfter(is.CertPEM)
			if err != nil {
				t.Fatalf("NotAfter: %v", err)
			}
			if diff := cmp.Diff(tc.want.notAfter, na); diff != "" {
				t.Errorf("%s\nNotAfter(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSerialsDiffer(t *testing.T) {
	ca := newCA(t, time.Hour)
	a, _ := ca.IssueClient("a", time.Hour, now)
	b, _ := ca.IssueClient("a", time.Hour, now)
	if parse(t, a.CertPEM).SerialNumber.Cmp(parse(t, b.CertPEM).SerialNumber) == 0 {
		t.Error("two certificates have the same serial")
	}
}
