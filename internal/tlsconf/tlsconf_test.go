package tlsconf

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/certs"
)

// pki is a throw-away authority with a server and a client key store in a
// test's directory.
type pki struct {
	dir                   string
	ca                    *certs.Authority
	trust, server, client string
}

func newPKI(t *testing.T, name string) pki {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewAuthority(name, "Giraffe test")
	if err != nil {
		t.Fatal(err)
	}
	p := pki{dir: dir, ca: ca, trust: filepath.Join(dir, "ca.pem"),
		server: filepath.Join(dir, "server.pem"), client: filepath.Join(dir, "client.pem")}
	if err := ca.WriteFiles(p.trust, filepath.Join(dir, "ca-key.pem")); err != nil {
		t.Fatal(err)
	}
	if err := ca.IssueFile(p.server, "server", "Giraffe test", "127.0.0.1", "localhost"); err != nil {
		t.Fatal(err)
	}
	if err := ca.IssueFile(p.client, "client", "Giraffe test"); err != nil {
		t.Fatal(err)
	}
	return p
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// handshake runs a TLS handshake over loopback TCP between a server
// configured by srv and a client configured by cli, and returns both
// sides' errors and the server's view of the client's certificates.
func handshake(t *testing.T, srv func(remoteIP string) *tls.Config, cli *tls.Config) (serverErr, clientErr error, peer tls.ConnectionState) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			serverErr = err
			return
		}
		defer nc.Close()
		host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
		tc := tls.Server(nc, srv(host))
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		serverErr = tc.Handshake()
		peer = tc.ConnectionState()
		if serverErr == nil {
			// A TLS 1.3 client learns that its certificate was refused
			// only from its first read; answer so that it can tell.
			tc.Write([]byte{1})
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(nc, cli)
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	if clientErr = tc.Handshake(); clientErr == nil {
		_, clientErr = tc.Read(make([]byte, 1))
	}
	tc.Close()
	<-done
	return serverErr, clientErr, peer
}

func source(t *testing.T, set Settings) *Source {
	t.Helper()
	s, err := New("ssl", set, quiet())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestClientAuthModes(t *testing.T) {
	p := newPKI(t, "ca")
	other := newPKI(t, "another ca")
	for _, tc := range []struct {
		auth       ClientAuth
		clientKey  string // "" presents no certificate
		ok         bool
		clientCert bool // the server saw a verified certificate
	}{
		{Need, p.client, true, true},
		{Need, "", false, false},
		{Need, other.client, false, false},
		{Want, p.client, true, true},
		{Want, "", true, false},
		{Want, other.client, false, false},
		{None, "", true, false},
		{None, p.client, true, false},
	} {
		set := Defaults(false)
		set.KeyStore, set.TrustStore, set.ClientAuth = p.server, p.trust, tc.auth
		srv := source(t, set)
		cset := Defaults(false)
		cset.KeyStore, cset.TrustStore = tc.clientKey, p.trust
		cli := &tls.Config{RootCAs: srv.Client("127.0.0.1").RootCAs, ServerName: "127.0.0.1"}
		if tc.clientKey != "" {
			c := source(t, cset)
			cli = c.Client("127.0.0.1")
		}
		serr, cerr, st := handshake(t, srv.Server, cli)
		name := tc.auth.String() + " with " + filepath.Base(filepath.Dir(tc.clientKey)) + "/" + filepath.Base(tc.clientKey)
		if ok := serr == nil && cerr == nil; ok != tc.ok {
			t.Errorf("%s: server %v, client %v; want success %v", name, serr, cerr, tc.ok)
		}
		if got := len(st.VerifiedChains) > 0; tc.ok && got != tc.clientCert {
			t.Errorf("%s: server verified a client certificate: %v, want %v", name, got, tc.clientCert)
		}
	}
}

func TestHostnameVerification(t *testing.T) {
	p := newPKI(t, "ca")
	set := Defaults(true)
	set.KeyStore, set.TrustStore = p.server, p.trust
	s := source(t, set)
	// The server's certificate names 127.0.0.1 and localhost.
	if serr, cerr, _ := handshake(t, s.Server, s.Client("127.0.0.1")); serr != nil || cerr != nil {
		t.Fatalf("peers with certificates naming 127.0.0.1: %v, %v", serr, cerr)
	}
	if _, cerr, _ := handshake(t, s.Server, s.Client("10.1.2.3")); cerr == nil {
		t.Fatal("dialer accepted a certificate that does not name the host it dialed")
	}
	// The client certificate names no address: an acceptor verifying
	// client host names refuses it; without verification it is accepted.
	set.KeyStore = p.client
	c := source(t, set)
	if serr, _, _ := handshake(t, s.Server, c.Client("127.0.0.1")); serr == nil || !strings.Contains(serr.Error(), "127.0.0.1") {
		t.Fatalf("acceptor verifying client host names: %v, want a refusal naming 127.0.0.1", serr)
	}
	set.HostnameVerification = false
	set.KeyStore = p.server
	s = source(t, set)
	set.KeyStore = p.client
	c = source(t, set)
	if serr, cerr, _ := handshake(t, s.Server, c.Client("10.1.2.3")); serr != nil || cerr != nil {
		t.Fatalf("without hostname verification: %v, %v", serr, cerr)
	}
	other := newPKI(t, "another ca")
	set.TrustStore = other.trust
	c = source(t, set)
	if _, cerr, _ := handshake(t, s.Server, c.Client("127.0.0.1")); cerr == nil {
		t.Fatal("without hostname verification, the dialer accepted a certificate from an authority it does not trust")
	}
}

// TestReload rotates the authority under a running Source: connections
// made after the files change use the new ones; a key store rewritten
// with garbage leaves the previous content in use.
func TestReload(t *testing.T) {
	p := newPKI(t, "ca")
	set := Defaults(false)
	set.KeyStore, set.TrustStore = p.server, p.trust
	s := source(t, set)
	cset := set
	cset.KeyStore = p.client
	old := source(t, cset)
	if serr, cerr, _ := handshake(t, s.Server, old.Client("127.0.0.1")); serr != nil || cerr != nil {
		t.Fatalf("before rotation: %v, %v", serr, cerr)
	}
	// A new authority replaces the old one in the same files.
	n := newPKI(t, "new ca")
	for from, to := range map[string]string{n.trust: p.trust, n.server: p.server} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+".tmp", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(to+".tmp", to); err != nil {
			t.Fatal(err)
		}
	}
	cset.KeyStore, cset.TrustStore = n.client, n.trust
	fresh := source(t, cset)
	if serr, cerr, _ := handshake(t, s.Server, fresh.Client("127.0.0.1")); serr != nil || cerr != nil {
		t.Fatalf("client of the new authority after rotation: %v, %v", serr, cerr)
	}
	if s.Reloads() != 1 {
		t.Fatalf("Reloads = %d, want 1", s.Reloads())
	}
	if serr, _, _ := handshake(t, s.Server, old.Client("127.0.0.1")); serr == nil {
		t.Fatal("client of the old authority accepted after rotation")
	}
	if err := os.WriteFile(p.server, []byte("not a key store"), 0o600); err != nil {
		t.Fatal(err)
	}
	if serr, cerr, _ := handshake(t, s.Server, fresh.Client("127.0.0.1")); serr != nil || cerr != nil {
		t.Fatalf("after a botched rewrite: %v, %v; want the previous files still in use", serr, cerr)
	}
	if s.Reloads() != 1 {
		t.Fatalf("Reloads = %d after a botched rewrite, want 1", s.Reloads())
	}
}

func TestSettings(t *testing.T) {
	set := Defaults(false)
	for k, v := range map[string]string{
		"keyStore.location": "/k.pem", "keyStore.type": "PEM", "keyStore.password": "x",
		"trustStore.location": "/t.pem", "trustStore.type": "pem", "clientAuth": "WANT",
		"hostnameVerification": "false", "protocol": "TLSv1.2",
		"ciphersuites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
	} {
		if known, err := set.Set(k, v); !known || err != nil {
			t.Fatalf("Set(%s=%s) = %v, %v", k, v, known, err)
		}
	}
	want := Settings{KeyStore: "/k.pem", TrustStore: "/t.pem", ClientAuth: Want,
		MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12,
		CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}
	if set.KeyStore != want.KeyStore || set.TrustStore != want.TrustStore || set.ClientAuth != want.ClientAuth ||
		set.HostnameVerification || set.MinVersion != want.MinVersion || set.MaxVersion != want.MaxVersion ||
		len(set.CipherSuites) != 1 || set.CipherSuites[0] != want.CipherSuites[0] {
		t.Fatalf("settings = %+v", set)
	}
	if _, err := set.Set("enabledProtocols", "TLSv1.3,TLSv1.2"); err != nil || set.MinVersion != tls.VersionTLS12 || set.MaxVersion != tls.VersionTLS13 {
		t.Fatalf("enabledProtocols: %v, %+v", err, set)
	}
	for k, v := range map[string]string{"keyStore.type": "JKS", "trustStore.type": "PKCS12", "clientAuth": "maybe",
		"protocol": "TLSv1", "ciphersuites": "TLS_RSA_WITH_RC4_128_SHA"} {
		if known, err := set.Set(k, v); !known || err == nil {
			t.Errorf("Set(%s=%s) = %v, %v; want a known key refused", k, v, known, err)
		}
	}
	if known, _ := set.Set("keyStore.flavour", "x"); known {
		t.Error("an unknown key was taken")
	}
}

func TestNewRefuses(t *testing.T) {
	p := newPKI(t, "ca")
	keyOnly := filepath.Join(p.dir, "key-only.pem")
	b, _ := os.ReadFile(p.server)
	os.WriteFile(keyOnly, b[:strings.Index(string(b), "-----BEGIN CERTIFICATE")], 0o600)
	enc := filepath.Join(p.dir, "enc.pem")
	os.WriteFile(enc, []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"), 0o600)
	for _, tc := range []struct {
		name string
		set  Settings
		want string
	}{
		{"no key store", Settings{TrustStore: p.trust}, "keyStore.location is not set"},
		{"no trust store", Settings{KeyStore: p.server}, "trustStore.location is not set"},
		{"a JKS file", Settings{KeyStore: "/etc/zk/keystore.jks", ClientAuth: None}, "not supported"},
		{"missing file", Settings{KeyStore: filepath.Join(p.dir, "nope.pem"), ClientAuth: None}, "no such file"},
		{"no certificate", Settings{KeyStore: keyOnly, ClientAuth: None}, "certificate"},
		{"encrypted key", Settings{KeyStore: enc, ClientAuth: None}, "encrypted"},
		{"trust store without certificates", Settings{KeyStore: p.server, TrustStore: keyOnly}, "no PEM certificate"},
	} {
		_, err := New("ssl", tc.set, quiet())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := New("ssl", Settings{KeyStore: p.server, ClientAuth: None}, quiet()); err != nil {
		t.Errorf("clientAuth none without a trust store: %v", err)
	}
}
