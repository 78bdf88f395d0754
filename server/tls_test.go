package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/certs"
	"github.com/giraffe-coord/giraffe/internal/tlsconf"
	"github.com/giraffe-coord/giraffe/itest"
	"github.com/giraffe-coord/giraffe/server"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// testPKI is a throw-away authority, its trust store and a server key
// store for 127.0.0.1, in a test directory.
type testPKI struct {
	dir, trust, server string
	ca                 *certs.Authority
}

func newTestPKI(t *testing.T, name string) testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewAuthority(name, "Giraffe test")
	if err != nil {
		t.Fatal(err)
	}
	p := testPKI{dir: dir, ca: ca, trust: filepath.Join(dir, "ca.pem"), server: filepath.Join(dir, "server.pem")}
	if err := ca.WriteFiles(p.trust, filepath.Join(dir, "ca-key.pem")); err != nil {
		t.Fatal(err)
	}
	if err := ca.IssueFile(p.server, "server", "Giraffe test", "127.0.0.1", "localhost"); err != nil {
		t.Fatal(err)
	}
	return p
}

// client issues a client key store whose subject is CN=cn,O=Giraffe test.
func (p testPKI) client(t *testing.T, cn string) string {
	t.Helper()
	ks := filepath.Join(p.dir, cn+".pem")
	if err := p.ca.IssueFile(ks, cn, "Giraffe test"); err != nil {
		t.Fatal(err)
	}
	return ks
}

// tlsConfig is a client's configuration: it trusts the authority in trust
// and, with keyStore, presents that certificate.
func tlsConfig(t *testing.T, trust, keyStore string) *tls.Config {
	t.Helper()
	b, err := os.ReadFile(trust)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(b)
	c := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	if keyStore != "" {
		pair, err := tls.LoadX509KeyPair(keyStore, keyStore)
		if err != nil {
			t.Fatal(err)
		}
		// Sent whatever authorities the server names, as Java and
		// OpenSSL clients do.
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	return c
}

// logBuffer collects a server's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startTLSServer runs a standalone server with a plain and a secure client
// port (the authority p's server certificate, clientAuth auth) and returns
// it with its log.
func startTLSServer(t *testing.T, p testPKI, auth tlsconf.ClientAuth, mutate ...func(*server.Config)) (*server.Server, *logBuffer) {
	t.Helper()
	port, err := itest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.ClientAddr, cfg.ClientPort = "127.0.0.1", 0
	cfg.SecureClientAddr, cfg.SecureClientPort = "127.0.0.1", port
	cfg.ClientTLS.KeyStore, cfg.ClientTLS.TrustStore, cfg.ClientTLS.ClientAuth = p.server, p.trust, auth
	cfg.TickTime = 100 * time.Millisecond
	cfg.FourLetterWords = []string{"*"}
	for _, m := range mutate {
		m(&cfg)
	}
	logs := &logBuffer{}
	s, err := server.New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, logs
}

// giraffeTLS connects Giraffe's own client over TLS; a client the server
// refuses keeps trying until the timeout (5 s; refusedWithin when given).
func giraffeTLS(t *testing.T, addr string, cfg *tls.Config, refusedWithin ...time.Duration) (*client.Conn, error) {
	t.Helper()
	timeout := 5 * time.Second
	if len(refusedWithin) > 0 {
		timeout = refusedWithin[0]
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		d := tls.Dialer{Config: cfg}
		return d.DialContext(ctx, network, a)
	}
	c, err := client.Connect(ctx, []string{addr}, client.WithDialer(dial), client.WithSessionTimeout(4*time.Second),
		client.WithLogger(slog.New(slog.DiscardHandler)))
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// whoAmI returns the session's identities as "scheme:user".
func whoAmI(t *testing.T, c *client.Conn) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	infos, err := c.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range infos {
		out = append(out, i.AuthScheme+":"+i.User)
	}
	return out
}

// TestSecureClientPortServesGoClients: go-zookeeper, through its dialer,
// and Giraffe's client work on the secure port, which gives a client with
// a certificate the id x509:<subject>; the plain port keeps serving.
func TestSecureClientPortServesGoClients(t *testing.T) {
	p := newTestPKI(t, "client ca")
	s, _ := startTLSServer(t, p, tlsconf.Need)
	cfg := tlsConfig(t, p.trust, p.client(t, "client"))
	dialer := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, cfg)
	}
	zc, ev, err := zk.Connect([]string{s.SecureAddr().String()}, 5*time.Second, zk.WithDialer(dialer), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	waitSession(t, zc, ev)
	if _, err := zc.Create("/tls", []byte("over tls"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	plain, _ := connect(t, s.Addr().String())
	if b, _, err := plain.Get("/tls"); err != nil || string(b) != "over tls" {
		t.Fatalf("plain port read %q, %v", b, err)
	}
	gc, err := giraffeTLS(t, s.SecureAddr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ids := whoAmI(t, gc); !slices.Contains(ids, "x509:CN=client,O=Giraffe test") || !slices.Contains(ids, "ip:127.0.0.1") {
		t.Fatalf("whoAmI = %v, want the certificate's subject and the address", ids)
	}
	// Four-letter words work on the secure port too.
	conf := fourLetterTLS(t, s.SecureAddr().String(), cfg, "conf")
	if want := fmt.Sprintf("secureClientPort=%d\n", s.SecureAddr().(*net.TCPAddr).Port); !strings.Contains(conf, want) {
		t.Fatalf("conf over TLS:\n%s\nwant %q", conf, want)
	}
}

// fourLetterTLS sends a four-letter word over TLS and returns the answer.
func fourLetterTLS(t *testing.T, addr string, cfg *tls.Config, word string) string {
	t.Helper()
	tc, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Write([]byte(word)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.ReadFrom(tc)
	return out.String()
}

func waitSession(t *testing.T, c *zk.Conn, ev <-chan zk.Event) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatal("no session")
		}
	}
}

// TestSecureClientPortClientAuth: with clientAuth need, a client without a
// certificate, or with one from an authority the trust store does not
// hold, is refused in the handshake and the server logs it; want admits a
// client without a certificate (with no x509 id) but not one with an
// untrusted certificate; none asks for no certificate.
func TestSecureClientPortClientAuth(t *testing.T) {
	p := newTestPKI(t, "client ca")
	other := newTestPKI(t, "another ca")
	good := p.client(t, "client")
	rogue := other.client(t, "rogue")
	for _, tc := range []struct {
		auth     tlsconf.ClientAuth
		keyStore string
		ok       bool
		x509     bool
	}{
		{tlsconf.Need, good, true, true},
		{tlsconf.Need, "", false, false},
		{tlsconf.Need, rogue, false, false},
		{tlsconf.Want, "", true, false},
		{tlsconf.Want, good, true, true},
		{tlsconf.Want, rogue, false, false},
		{tlsconf.None, good, true, false},
	} {
		name := tc.auth.String() + " with no certificate"
		if tc.keyStore != "" {
			name = tc.auth.String() + " with " + filepath.Base(tc.keyStore)
		}
		t.Run(name, func(t *testing.T) {
			s, logs := startTLSServer(t, p, tc.auth)
			wait := []time.Duration{}
			if !tc.ok {
				wait = append(wait, time.Second)
			}
			c, err := giraffeTLS(t, s.SecureAddr().String(), tlsConfig(t, p.trust, tc.keyStore), wait...)
			if !tc.ok {
				if err == nil {
					t.Fatalf("connected; whoAmI %v", whoAmI(t, c))
				}
				waitLog(t, logs, "refusing TLS client: handshake failed")
				return
			}
			if err != nil {
				t.Fatalf("refused: %v\n%s", err, logs)
			}
			ids := whoAmI(t, c)
			if has := slices.Contains(ids, "x509:CN=client,O=Giraffe test"); has != tc.x509 {
				t.Fatalf("whoAmI = %v, want an x509 id: %v", ids, tc.x509)
			}
		})
	}
}

func waitLog(t *testing.T, logs *logBuffer, line string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), line) {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not log %q:\n%s", line, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestX509ACL: a node whose ACL names a certificate's subject is readable
// by the holder of that certificate only (and by the x509 super user); an
// "auth" ACL expands to the x509 id; addAuth x509 without a certificate
// fails.
func TestX509ACL(t *testing.T) {
	p := newTestPKI(t, "client ca")
	s, _ := startTLSServer(t, p, tlsconf.Want, func(c *server.Config) { c.X509SuperUser = "CN=admin,O=Giraffe test" })
	addr := s.SecureAddr().String()
	owner, err := giraffeTLS(t, addr, tlsConfig(t, p.trust, p.client(t, "owner")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mine := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "x509", ID: "CN=owner,O=Giraffe test"}}}
	if _, _, err := owner.Create(ctx, "/mine", []byte("secret"), client.Persistent, mine); err != nil {
		t.Fatal(err)
	}
	auth := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.AuthIDs}}
	if _, _, err := owner.Create(ctx, "/auth", nil, client.Persistent, auth); err != nil {
		t.Fatal(err)
	}
	if got, _, err := owner.GetACL(ctx, "/auth"); err != nil || len(got) != 1 || got[0].ID != mine[0].ID {
		t.Fatalf("the auth ACL expanded to %v, %v; want %v", got, err, mine[0].ID)
	}
	if b, _, err := owner.Get(ctx, "/mine"); err != nil || string(b) != "secret" {
		t.Fatalf("owner reads %q, %v", b, err)
	}
	other, err := giraffeTLS(t, addr, tlsConfig(t, p.trust, p.client(t, "other")))
	if err != nil {
		t.Fatal(err)
	}
	anonymous, err := giraffeTLS(t, addr, tlsConfig(t, p.trust, ""))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*client.Conn{"another certificate": other, "no certificate": anonymous} {
		if _, _, err := c.Get(ctx, "/mine"); !errors.Is(err, zkproto.ErrNoAuth) {
			t.Errorf("%s: Get = %v, want NOAUTH", name, err)
		}
	}
	admin, err := giraffeTLS(t, addr, tlsConfig(t, p.trust, p.client(t, "admin")))
	if err != nil {
		t.Fatal(err)
	}
	if b, _, err := admin.Get(ctx, "/mine"); err != nil || string(b) != "secret" {
		t.Fatalf("the x509 super user reads %q, %v", b, err)
	}
	if err := owner.AddAuth(ctx, "x509", nil); err != nil {
		t.Fatalf("addAuth x509 with a certificate: %v", err)
	}
	if err := anonymous.AddAuth(ctx, "x509", nil); !errors.Is(err, zkproto.ErrAuthFailed) {
		t.Fatalf("addAuth x509 without a certificate: %v, want AUTHFAILED", err)
	}
}

// TestSecureOnlyConfig: a zoo.cfg with secureClientPort and no clientPort
// has no plain client port, as ZooKeeper's.
func TestSecureOnlyConfig(t *testing.T) {
	p := newTestPKI(t, "client ca")
	port, err := itest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "zoo.cfg")
	os.WriteFile(cfgFile, []byte(fmt.Sprintf("dataDir=%s\n4lw.commands.whitelist=conf\nsecureClientPortAddress=127.0.0.1\nsecureClientPort=%d\n"+
		"ssl.keyStore.location=%s\nssl.trustStore.location=%s\n", dir, port, p.server, p.trust)), 0o644)
	cfg := server.DefaultConfig()
	if _, err := server.LoadConfigFile(cfgFile, &cfg); err != nil {
		t.Fatal(err)
	}
	s, err := server.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Addr().String() != s.SecureAddr().String() {
		t.Fatalf("Addr %v, want the secure port %v", s.Addr(), s.SecureAddr())
	}
	cli := tlsConfig(t, p.trust, p.client(t, "client"))
	c, err := giraffeTLS(t, s.Addr().String(), cli)
	if err != nil {
		t.Fatal(err)
	}
	if ids := whoAmI(t, c); !slices.Contains(ids, "x509:CN=client,O=Giraffe test") {
		t.Fatalf("whoAmI = %v", ids)
	}
	if conf := fourLetterTLS(t, s.Addr().String(), cli, "conf"); !strings.Contains(conf, "clientPort=-1\n") {
		t.Fatalf("conf:\n%s\nwant clientPort=-1, no plain port", conf)
	}
}

// TestClientCertificateRotation replaces the secure port's authority on
// disk: clients of the new one connect without a restart, clients of the
// old one no longer do.
func TestClientCertificateRotation(t *testing.T) {
	p := newTestPKI(t, "first ca")
	s, logs := startTLSServer(t, p, tlsconf.Need)
	oldClient := tlsConfig(t, p.trust, p.client(t, "client"))
	if _, err := giraffeTLS(t, s.SecureAddr().String(), oldClient); err != nil {
		t.Fatal(err)
	}
	n := newTestPKI(t, "second ca")
	for from, to := range map[string]string{n.trust: p.trust, n.server: p.server} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(to+".new", b, 0o600)
		if err := os.Rename(to+".new", to); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := giraffeTLS(t, s.SecureAddr().String(), tlsConfig(t, n.trust, n.client(t, "client"))); err != nil {
		t.Fatalf("client of the new authority: %v\n%s", err, logs)
	}
	waitLog(t, logs, "TLS files changed; new connections use them")
	if _, err := giraffeTLS(t, s.SecureAddr().String(), oldClient, time.Second); err == nil {
		t.Fatal("client of the old authority connected after the rotation")
	}
}
