package certs

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

// TestAuthorityRoundTrip writes an authority, reads it back, and checks
// that what it issues is a key store crypto/tls reads, verifies against
// the authority for the hosts given, and that key files are private.
func TestAuthorityRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewAuthority("test ca", "Giraffe")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	// A key file that existed with wider permissions loses them.
	if err := os.WriteFile(keyFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteFiles(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	back, err := LoadAuthority(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ks := filepath.Join(dir, "server.pem")
	if err := back.IssueFile(ks, "server 1", "Giraffe", "127.0.0.1", "localhost"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{keyFile, ks} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v; want 0600", f, fi.Mode().Perm(), err)
		}
	}
	b, err := os.ReadFile(ks)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(b, b)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("verify for %s: %v", host, err)
		}
	}
	if got := pair.Leaf.Subject.String(); got != "CN=server 1,O=Giraffe" {
		t.Errorf("subject %q", got)
	}
}
