package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// Source gives the TLS configuration of each new connection from one set
// of Settings. It reads the key store and trust store when it is made, and
// again whenever either file has changed (size, modification time, or
// another file renamed into its place) when a connection starts; a file that does not read well then (half written,
// a key that does not match its certificate) is logged and the previous
// content kept, so a botched rotation never takes the port down.
// Connections already open keep the certificates they were made with.
type Source struct {
	set  Settings
	name string // the keys' prefix, for log lines: "ssl" or "ssl.quorum"
	log  *slog.Logger

	mu      sync.Mutex
	cur     material
	stamps  [2]stamp // of the key store and the trust store when last read
	reloads int
}

// material is what the files hold.
type material struct {
	cert  tls.Certificate
	roots *x509.CertPool // nil when there is no trust store
}

// stamp identifies a version of a file: its size and modification time,
// and the file itself, so that a file renamed into place is noticed even
// within the clock's granularity.
type stamp struct {
	size int64
	mod  time.Time
	fi   os.FileInfo
}

func (a stamp) same(b stamp) bool {
	if a.fi == nil || b.fi == nil {
		return a.fi == nil && b.fi == nil
	}
	return a.size == b.size && a.mod.Equal(b.mod) && os.SameFile(a.fi, b.fi)
}

// New reads the stores of set. name is the keys' prefix, used in errors
// and log lines ("ssl", "ssl.quorum").
func New(name string, set Settings, log *slog.Logger) (*Source, error) {
	if err := set.check(); err != nil {
		return nil, fmt.Errorf("%s.%w", name, err)
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Source{set: set, name: name, log: log}
	s.stamps = s.stat()
	m, err := s.read()
	if err != nil {
		return nil, err
	}
	s.cur = m
	return s, nil
}

// Settings returns the settings the Source was made with.
func (s *Source) Settings() Settings { return s.set }

// Reloads returns how many times the files were read again after a change.
func (s *Source) Reloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reloads
}

// Server returns the configuration of a connection this server accepts
// from the IP address remoteIP: its certificate, and what it asks of the
// client (Settings.ClientAuth) verified against the trust store, the
// client's certificate naming remoteIP when client hostname verification
// is on.
func (s *Source) Server(remoteIP string) *tls.Config {
	m := s.material()
	c := s.base(m)
	c.ClientCAs = m.roots
	switch s.set.ClientAuth {
	case Need:
		c.ClientAuth = tls.RequireAndVerifyClientCert
	case Want:
		c.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		c.ClientAuth = tls.NoClientCert
	}
	if s.set.ClientAuth != None && s.set.HostnameVerification && s.set.ClientHostnameVerification {
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return nil
			}
			return cs.PeerCertificates[0].VerifyHostname(remoteIP)
		}
	}
	return c
}

// Client returns the configuration of a connection this server dials to
// host (a name or an IP address): it presents its certificate and
// verifies the other side's against the trust store, and that it names
// host unless hostname verification is off.
func (s *Source) Client(host string) *tls.Config {
	m := s.material()
	c := s.base(m)
	// Present the certificate even when the server names authorities it
	// was not issued by (crypto/tls would then send none), so that a
	// server that does not trust it says so.
	c.Certificates = nil
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &m.cert, nil }
	c.RootCAs = m.roots
	c.ServerName = host
	if !s.set.HostnameVerification {
		// crypto/tls verifies the name with the chain; without the name,
		// the chain is verified here instead.
		c.InsecureSkipVerify = true
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server presented no certificate")
			}
			inter := x509.NewCertPool()
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: m.roots, Intermediates: inter})
			return err
		}
	}
	return c
}

// base is what both sides share.
func (s *Source) base(m material) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{m.cert},
		MinVersion:   max(s.set.MinVersion, tls.VersionTLS12),
		MaxVersion:   s.set.MaxVersion,
		CipherSuites: s.set.CipherSuites,
	}
}

// material returns the stores' content, read again if a file changed.
func (s *Source) material() material {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.stat()
	if now[0].same(s.stamps[0]) && now[1].same(s.stamps[1]) {
		return s.cur
	}
	s.stamps = now
	m, err := s.read()
	if err != nil {
		s.log.Warn("TLS files changed but do not read well; keeping the previous ones",
			"keys", s.name, "err", err)
		return s.cur
	}
	s.cur = m
	s.reloads++
	s.log.Info("TLS files changed; new connections use them", "keys", s.name,
		"keyStore", s.set.KeyStore, "trustStore", s.set.TrustStore, "subject", m.cert.Leaf.Subject.String(),
		"notAfter", m.cert.Leaf.NotAfter.Format(time.RFC3339))
	return m
}

func (s *Source) stat() [2]stamp {
	var out [2]stamp
	for i, f := range []string{s.set.KeyStore, s.set.TrustStore} {
		if f == "" {
			continue
		}
		if fi, err := os.Stat(f); err == nil {
			out[i] = stamp{fi.Size(), fi.ModTime(), fi}
		}
	}
	return out
}

// read reads both stores.
func (s *Source) read() (material, error) {
	var m material
	b, err := os.ReadFile(s.set.KeyStore)
	if err != nil {
		return m, fmt.Errorf("%s.keyStore.location: %w", s.name, err)
	}
	if encrypted(b) {
		return m, fmt.Errorf("%s.keyStore.location %s: the private key is encrypted, which Giraffe does not read; "+
			"decrypt it (openssl pkcs8 -in KEY -out PLAIN) and keep the file readable by the server only",
			s.name, s.set.KeyStore)
	}
	m.cert, err = tls.X509KeyPair(b, b)
	if err != nil {
		return m, fmt.Errorf("%s.keyStore.location %s: %w (want a PEM file holding the private key and its certificate)",
			s.name, s.set.KeyStore, err)
	}
	if s.set.TrustStore == "" {
		return m, nil
	}
	b, err = os.ReadFile(s.set.TrustStore)
	if err != nil {
		return m, fmt.Errorf("%s.trustStore.location: %w", s.name, err)
	}
	m.roots = x509.NewCertPool()
	if !m.roots.AppendCertsFromPEM(b) {
		return m, fmt.Errorf("%s.trustStore.location %s: no PEM certificate in it", s.name, s.set.TrustStore)
	}
	return m, nil
}

// encrypted reports whether a PEM file holds an encrypted private key
// (PKCS #8 or OpenSSL's legacy encryption).
func encrypted(b []byte) bool {
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			return false
		}
		if blk.Type == "ENCRYPTED PRIVATE KEY" ||
			strings.HasSuffix(blk.Type, "PRIVATE KEY") && strings.Contains(blk.Headers["Proc-Type"], "ENCRYPTED") {
			return true
		}
	}
}
