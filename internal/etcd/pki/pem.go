package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// newSerial is a random 128-bit serial number. RFC 5280 wants serials unique per CA and
// unpredictable; with 128 random bits a collision is not a concern. Zero is not a valid
// serial, so it is drawn again.
func newSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, errors.Wrap(err, errSerial)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der})
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, errors.Wrap(err, errMarshalKey)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	for rest := certPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New(errNoCertPEM)
		}
		if b.Type != pemCertificate {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		return cert, errors.Wrap(err, errParseCert)
	}
}

// parseKey reads a PKCS #8 key, and the PKCS #1 and SEC 1 keys that CAs made by other tools
// (openssl, cfssl) are often stored as.
func parseKey(keyPEM []byte) (crypto.Signer, error) {
	for rest := keyPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New(errNoKeyPEM)
		}
		var key any
		var err error
		switch b.Type {
		case pemPrivateKey:
			key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, errors.Wrap(err, errParseKey)
		}
		s, ok := key.(crypto.Signer)
		if !ok {
			return nil, errors.New(errNotSigner)
		}
		return s, nil
	}
}
