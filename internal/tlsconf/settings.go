// Package tlsconf turns ZooKeeper's TLS settings (the ssl.* keys of the
// secure client port, the ssl.quorum.* keys of the links between members)
// into crypto/tls configurations. The key store and the trust store are
// PEM files, as ZooKeeper reads them with ssl.keyStore.type=PEM. A Source
// reads them again when they change, so that certificates rotate without
// a restart: every connection made after the change uses the new files.
package tlsconf

import (
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ClientAuth is what a server asks of its TLS clients (ssl.clientAuth).
type ClientAuth int

const (
	// Need refuses a client without a certificate the trust store
	// accepts, in the handshake. It is the zero value because it is
	// ZooKeeper's default.
	Need ClientAuth = iota
	// Want asks for a certificate and verifies one given, but admits a
	// client without one.
	Want
	// None asks for no certificate.
	None
)

// ParseClientAuth reads ssl.clientAuth: none, want or need, in any case;
// empty means need.
func ParseClientAuth(s string) (ClientAuth, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "need":
		return Need, nil
	case "want":
		return Want, nil
	case "none":
		return None, nil
	}
	return Need, fmt.Errorf("clientAuth %q: want none, want or need", s)
}

func (a ClientAuth) String() string {
	switch a {
	case Want:
		return "want"
	case None:
		return "none"
	}
	return "need"
}

// Settings are one set of ZooKeeper's TLS keys, those under ssl. or those
// under ssl.quorum.
type Settings struct {
	// KeyStore is a PEM file holding this server's private key (PKCS #8,
	// PKCS #1 or SEC 1, unencrypted) and its certificate chain, leaf
	// first (keyStore.location).
	KeyStore string
	// TrustStore is a PEM file of the certificates of the authorities
	// whose certificates this server accepts from its peers or clients
	// (trustStore.location).
	TrustStore string
	// ClientAuth is what the accepting side asks of the other
	// (clientAuth).
	ClientAuth ClientAuth
	// HostnameVerification makes the dialing side check that the
	// certificate it receives names the host it dialed (ZooKeeper's
	// hostnameVerification, on by default: see Defaults).
	HostnameVerification bool
	// ClientHostnameVerification makes the accepting side check, when
	// HostnameVerification is on too, that the client's certificate
	// names the IP address the client connects from
	// (clientHostnameVerification; ZooKeeper's default is on between
	// members and off on the client port).
	ClientHostnameVerification bool
	// MinVersion and MaxVersion bound the TLS versions (protocol,
	// enabledProtocols); zero means TLS 1.2 and TLS 1.3, ZooKeeper's
	// default.
	MinVersion, MaxVersion uint16
	// CipherSuites are the TLS 1.2 cipher suites allowed (ciphersuites);
	// nil means Go's defaults. TLS 1.3's suites are always on.
	CipherSuites []uint16
}

// Defaults returns ZooKeeper's defaults: clientAuth need, hostname
// verification on, and client hostname verification on between members
// (quorum) and off on the client port.
func Defaults(quorum bool) Settings {
	return Settings{HostnameVerification: true, ClientHostnameVerification: quorum}
}

// Enabled reports whether any key store or trust store is configured.
func (s *Settings) Enabled() bool { return s.KeyStore != "" || s.TrustStore != "" }

// Set applies one ZooKeeper key of these settings, named without its
// prefix (ssl. or ssl.quorum.): keyStore.location, keyStore.password,
// keyStore.type, trustStore.location, trustStore.password,
// trustStore.type, clientAuth, hostnameVerification,
// clientHostnameVerification, protocol, enabledProtocols, ciphersuites.
// It reports whether the key is one of them.
func (s *Settings) Set(key, val string) (bool, error) {
	var err error
	switch key {
	case "keyStore.location":
		s.KeyStore = val
	case "trustStore.location":
		s.TrustStore = val
	case "keyStore.password", "trustStore.password":
		// A PEM trust store has no password, and Giraffe reads no
		// encrypted key (New says so when it meets one).
	case "keyStore.type", "trustStore.type":
		err = checkStoreType(val)
	case "clientAuth":
		s.ClientAuth, err = ParseClientAuth(val)
	case "hostnameVerification":
		s.HostnameVerification, err = strconv.ParseBool(val)
	case "clientHostnameVerification":
		s.ClientHostnameVerification, err = strconv.ParseBool(val)
	case "protocol":
		// ZooKeeper's SSLContext protocol: TLSv1.3 enables 1.3 and 1.2,
		// TLSv1.2 only 1.2.
		var v uint16
		if v, err = parseVersion(val); err == nil {
			s.MinVersion, s.MaxVersion = tls.VersionTLS12, v
			if v == tls.VersionTLS12 {
				s.MinVersion = v
			}
		}
	case "enabledProtocols":
		s.MinVersion, s.MaxVersion = 0, 0
		for _, p := range strings.Split(val, ",") {
			v, perr := parseVersion(p)
			if perr != nil {
				return true, perr
			}
			if s.MinVersion == 0 || v < s.MinVersion {
				s.MinVersion = v
			}
			s.MaxVersion = max(s.MaxVersion, v)
		}
	case "ciphersuites":
		s.CipherSuites, err = parseCipherSuites(val)
	default:
		return false, nil
	}
	return true, err
}

// checkStoreType accepts PEM, the only store format Giraffe reads.
func checkStoreType(t string) error {
	if strings.EqualFold(strings.TrimSpace(t), "PEM") {
		return nil
	}
	return fmt.Errorf("store type %q is not supported: Giraffe reads PEM key and trust stores "+
		"(convert a JKS or PKCS12 store with keytool and openssl, see docs/security.md)", t)
}

// checkStoreFile refuses a store whose name says it is not PEM, as
// ZooKeeper infers a store's type from its extension.
func checkStoreFile(file string) error {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".jks", ".p12", ".pfx", ".bcfks":
		return checkStoreType(strings.TrimPrefix(filepath.Ext(file), "."))
	}
	return nil
}

func parseVersion(s string) (uint16, error) {
	switch strings.TrimSpace(s) {
	case "TLSv1.2":
		return tls.VersionTLS12, nil
	case "TLSv1.3", "TLS":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("TLS protocol %q is not supported: TLSv1.2 or TLSv1.3", s)
}

// parseCipherSuites reads a comma-separated list of IANA cipher suite
// names, the names Java uses too. TLS 1.3 suites are accepted and left
// out: Go always enables them.
func parseCipherSuites(val string) ([]uint16, error) {
	var out []uint16
	for _, name := range strings.Split(val, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		i := slices.IndexFunc(tls.CipherSuites(), func(c *tls.CipherSuite) bool { return c.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("cipher suite %q is unknown or insecure", name)
		}
		if c := tls.CipherSuites()[i]; !slices.Equal(c.SupportedVersions, []uint16{tls.VersionTLS13}) {
			out = append(out, c.ID)
		}
	}
	return out, nil
}

// check reports the first setting that cannot work for a side that
// presents its key (both sides do) and, unless it asks nothing of the
// other side, verifies it against the trust store. Errors start with the
// key's name, without its prefix.
func (s *Settings) check() error {
	if s.KeyStore == "" {
		return errors.New("keyStore.location is not set")
	}
	if err := checkStoreFile(s.KeyStore); err != nil {
		return fmt.Errorf("keyStore.location %s: %w", s.KeyStore, err)
	}
	if s.TrustStore == "" && s.ClientAuth != None {
		return fmt.Errorf("trustStore.location is not set (needed to verify certificates; clientAuth is %s)", s.ClientAuth)
	}
	if s.TrustStore != "" {
		if err := checkStoreFile(s.TrustStore); err != nil {
			return fmt.Errorf("trustStore.location %s: %w", s.TrustStore, err)
		}
	}
	if s.MinVersion != 0 && s.MaxVersion != 0 && s.MinVersion > s.MaxVersion {
		return errors.New("enabledProtocols: no TLS version enabled")
	}
	return nil
}
