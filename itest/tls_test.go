package itest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/certs"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// clusterTLS is the TLS configuration of a client of the cluster c
// started with TLS: it trusts the cluster's authority and presents the
// cluster's client certificate.
func clusterTLS(t *testing.T, c *launcher.Cluster) *tls.Config {
	t.Helper()
	f := launcher.TLSFilesIn(c.Spec.Dir)
	b, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(b)
	pair, err := tls.LoadX509KeyPair(f.Client, f.Client)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", Certificates: []tls.Certificate{pair}}
}

// zkConnectTLS opens a go-zookeeper session over TLS (through its dialer)
// and waits for it.
func zkConnectTLS(t *testing.T, servers []string, cfg *tls.Config) *zk.Conn {
	t.Helper()
	dialer := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, cfg)
	}
	c, ev, err := zk.Connect(servers, 4*time.Second, zk.WithDialer(dialer), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(20 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatalf("no TLS session with %v", servers)
		}
	}
	return c
}

// TestTLSEnsemble starts a classic-3 ensemble the way `giraffe cluster
// start --tls` does (secure client ports, sslQuorum): go-zookeeper and
// ZooKeeper's own Java client work over TLS on every server, a node whose
// ACL names the client certificate's subject is readable over TLS only;
// then one member comes back with a certificate another authority signed:
// its peers refuse it and it refuses them, each side logging why, it never
// serves, and the two others keep serving; given a certificate of the
// cluster's authority again, it catches up.
func TestTLSEnsemble(t *testing.T) {
	c := StartEnsembleSpec(t, Classic3, func(s *launcher.Spec) { s.TLS = true })
	f := launcher.TLSFilesIn(c.Spec.Dir)
	cfg := clusterTLS(t, c)
	var secure []string
	for _, s := range c.Servers {
		secure = append(secure, s.SecureClientAddr)
	}

	t.Run("go-zookeeper on every secure port", func(t *testing.T) {
		mine := zk.ACL{Perms: zk.PermAll, Scheme: "x509", ID: f.ClientSubject}
		first := zkConnectTLS(t, secure[:1], cfg)
		if _, err := first.Create("/tls", []byte("secret"), 0, []zk.ACL{mine}); err != nil {
			t.Fatal(err)
		}
		for _, addr := range secure {
			conn := zkConnectTLS(t, []string{addr}, cfg)
			if _, err := conn.Sync("/tls"); err != nil {
				t.Fatal(err)
			}
			if b, _, err := conn.Get("/tls"); err != nil || string(b) != "secret" {
				t.Fatalf("%s: Get = %q, %v", addr, b, err)
			}
		}
		plain := zkConnect(t, addrs(c)[1:2])
		if _, _, err := plain.Get("/tls"); err != zk.ErrNoAuth {
			t.Fatalf("a plain client read the certificate's node: %v", err)
		}
	})

	t.Run("Java client", func(t *testing.T) {
		lib := os.Getenv("ZK_LIB")
		if lib == "" {
			t.Skip("ZK_LIB is not set: run through `make test`, which fetches ZooKeeper's jars")
		}
		out := javaCLI(t, lib, secure[2], f, "create /java over-tls\nget /java\nwhoami\nget /tls\n")
		for _, want := range []string{"Created /java", "over-tls", "x509: " + f.ClientSubject, "secret"} {
			if !strings.Contains(out, want) {
				t.Fatalf("the Java client's transcript lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("member with another authority's certificate", func(t *testing.T) {
		rogue := c.Servers[2]
		if err := c.Kill(rogue.ID); err != nil {
			t.Fatal(err)
		}
		waitDead(t, c, rogue.ID)
		dir := t.TempDir()
		other, err := certs.NewAuthority("another CA", "Giraffe cluster")
		if err != nil {
			t.Fatal(err)
		}
		otherCA := filepath.Join(dir, "ca.pem")
		if err := other.WriteFiles(otherCA, filepath.Join(dir, "ca-key.pem")); err != nil {
			t.Fatal(err)
		}
		ks := filepath.Join(rogue.Dir, "server.pem")
		if err := other.IssueFile(ks, fmt.Sprintf("server %d", rogue.ID), "Giraffe cluster", "127.0.0.1"); err != nil {
			t.Fatal(err)
		}
		cfgFile := filepath.Join(rogue.Dir, "zoo.cfg")
		orig, err := os.ReadFile(cfgFile)
		if err != nil {
			t.Fatal(err)
		}
		appendConfig(t, rogue, "ssl.quorum.trustStore.location="+otherCA)
		if err := c.Restart(rogue.ID); err != nil {
			t.Fatal(err)
		}
		// The others keep serving writes.
		conn := zkConnect(t, addrs(c)[:1])
		for i := 0; i < 20; i++ {
			if _, err := conn.Create(fmt.Sprintf("/while-refused-%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		}
		waitLogs(t, c, 20*time.Second, map[members.ID][]string{
			c.Servers[0].ID: {"refused connection: TLS handshake failed", "certificate signed by unknown authority"},
			rogue.ID:        {"refused connection: TLS handshake failed", "cannot connect to peer"},
		})
		// Never admitted: it does not serve (an election timeout is 200 ms).
		for i := 0; i < 10; i++ {
			if kv, err := launcher.FourLetter(rogue.ClientAddr, "srvr", time.Second); err == nil && kv["Mode"] != "" {
				t.Fatalf("the untrusted member serves: %v", kv)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// A certificate of the cluster's authority lets it back in.
		if err := c.Kill(rogue.ID); err != nil {
			t.Fatal(err)
		}
		waitDead(t, c, rogue.ID)
		ca, err := certs.LoadAuthority(f.CA, f.CAKey)
		if err != nil {
			t.Fatal(err)
		}
		if err := ca.IssueFile(ks, fmt.Sprintf("server %d", rogue.ID), "Giraffe cluster", "127.0.0.1"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfgFile, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(rogue.ID); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitLeader(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		back := zkConnectTLS(t, []string{rogue.SecureClientAddr}, cfg)
		if _, err := back.Sync("/"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := back.Get("/while-refused-19"); err != nil {
			t.Fatalf("the member let back in lacks a write made while it was refused: %v", err)
		}
	})
}

// javaCLI runs ZooKeeper's Java CLI (zkCli) over TLS against addr with the
// cluster's client certificate, feeding it script, and returns what it
// printed.
func javaCLI(t *testing.T, lib, addr string, f launcher.TLSFiles, script string) string {
	t.Helper()
	jars, err := filepath.Glob(filepath.Join(lib, "*.jar"))
	if err != nil || len(jars) == 0 {
		t.Fatalf("no jars in ZK_LIB=%s", lib)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-cp", strings.Join(jars, ":"),
		"-Dlogback.configurationFile="+filepath.Join(lib, "..", "logback.xml"),
		"-Dzookeeper.client.secure=true",
		"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"-Dzookeeper.ssl.keyStore.location="+f.Client, "-Dzookeeper.ssl.keyStore.type=PEM",
		"-Dzookeeper.ssl.trustStore.location="+f.CA, "-Dzookeeper.ssl.trustStore.type=PEM",
		"org.apache.zookeeper.ZooKeeperMain", "-server", addr)
	cmd.Stdin = strings.NewReader(script + "quit\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("java client: %v:\n%s", err, out)
	}
	return string(out)
}

// waitDead waits until server id's process has exited.
func waitDead(t *testing.T, c *launcher.Cluster, id members.ID) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := c.Status()
		for _, s := range st {
			if s.ID == id && !s.Alive {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %d still runs", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLogs waits until every server named has logged every line given.
func waitLogs(t *testing.T, c *launcher.Cluster, timeout time.Duration, want map[members.ID][]string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		missing := ""
		for id, lines := range want {
			s := c.Servers[0]
			for _, x := range c.Servers {
				if x.ID == id {
					s = x
				}
			}
			log := serverLog(t, s)
			for _, l := range lines {
				if !strings.Contains(log, l) {
					missing = fmt.Sprintf("server %d has not logged %q; its peer-link lines:\n%s", id, l, transportLines(log, 10))
				}
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// transportLines returns the last n lines of a server log about its peer
// links (which the logs shown after a failure leave out).
func transportLines(log string, n int) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "transport: ") {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}
