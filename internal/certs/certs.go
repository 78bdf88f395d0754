// Package certs makes throw-away X.509 material, for trying TLS on a
// local ensemble (giraffe cluster start --tls) and for tests: a
// certificate authority and the certificates it signs, in the PEM files
// ZooKeeper's PEM key and trust stores read. A key store file holds a
// private key (PKCS #8) and its certificate; a trust store file holds the
// authority's certificate. Keys are ECDSA P-256. Files holding a private
// key are written readable by their owner only.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// Validity is how long the certificates made here are valid.
const Validity = 365 * 24 * time.Hour

// clockSkew backdates certificates, so that a machine whose clock is a
// little behind accepts them at once.
const clockSkew = time.Hour

// Authority is a certificate authority: its certificate and signing key.
type Authority struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewAuthority makes a self-signed authority whose subject is CN=name,O=org.
func NewAuthority(name, org string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(pkix.Name{CommonName: name, Organization: []string{org}})
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.MaxPathLenZero = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Authority{Cert: cert, Key: key}, nil
}

// LoadAuthority reads an authority written by WriteFiles.
func LoadAuthority(certFile, keyFile string) (*Authority, error) {
	certs, key, err := readPEM(certFile)
	if err != nil {
		return nil, err
	}
	_, key, err = readPEM(keyFile)
	if err != nil {
		return nil, err
	}
	if len(certs) != 1 || key == nil {
		return nil, fmt.Errorf("%s and %s: want one certificate and one key", certFile, keyFile)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an ECDSA key", keyFile)
	}
	return &Authority{Cert: certs[0], Key: ec}, nil
}

// WriteFiles writes the authority's certificate to certFile (the trust
// store of everyone who trusts it) and its key to keyFile (mode 0600).
func (a *Authority) WriteFiles(certFile, keyFile string) error {
	if err := os.WriteFile(certFile, a.CertPEM(), 0o644); err != nil {
		return err
	}
	k, err := keyPEM(a.Key)
	if err != nil {
		return err
	}
	return writePrivate(keyFile, k)
}

// CertPEM returns the authority's certificate in PEM.
func (a *Authority) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Cert.Raw})
}

// Issue signs a certificate for the subject CN=name,O=org, valid for
// server and client authentication and, as a server's, for hosts (IP
// addresses or DNS names), and returns it with its new private key as a
// PEM key store: the key, then the certificate.
func (a *Authority) Issue(name, org string, hosts ...string) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(pkix.Name{CommonName: name, Organization: []string{org}})
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, &key.PublicKey, a.Key)
	if err != nil {
		return nil, err
	}
	k, err := keyPEM(key)
	if err != nil {
		return nil, err
	}
	return append(k, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...), nil
}

// IssueFile is Issue writing the key store to file (mode 0600).
func (a *Authority) IssueFile(file, name, org string, hosts ...string) error {
	ks, err := a.Issue(name, org, hosts...)
	if err != nil {
		return err
	}
	return writePrivate(file, ks)
}

// template returns a certificate template for subject with a random
// serial number and this package's validity.
func template(subject pkix.Name) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &x509.Certificate{SerialNumber: serial, Subject: subject,
		NotBefore: now.Add(-clockSkew), NotAfter: now.Add(Validity)}, nil
}

func keyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// writePrivate writes a file holding a private key, readable by its owner
// only: a file that existed with wider permissions loses them before the
// key is written.
func writePrivate(file string, b []byte) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readPEM reads the certificates and the PKCS #8 private key of a PEM file.
func readPEM(file string) ([]*x509.Certificate, any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	var certs []*x509.Certificate
	var key any
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			break
		}
		switch blk.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", file, err)
			}
			certs = append(certs, c)
		case "PRIVATE KEY":
			if key, err = x509.ParsePKCS8PrivateKey(blk.Bytes); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", file, err)
			}
		}
	}
	if len(certs) == 0 && key == nil {
		return nil, nil, errors.New(file + ": no certificate or key in PEM")
	}
	return certs, key, nil
}
