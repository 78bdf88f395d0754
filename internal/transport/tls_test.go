package transport

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/certs"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/tlsconf"
)

// quorumTLS makes an authority in a test directory and returns a function
// that issues member id a key store and returns its TLS source (ZooKeeper's
// quorum defaults: client authentication required, host names verified both
// ways).
func quorumTLS(t *testing.T, name string) func(id gpaxos.ID) *tlsconf.Source {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewAuthority(name, "Giraffe test")
	if err != nil {
		t.Fatal(err)
	}
	trust := filepath.Join(dir, "ca.pem")
	if err := ca.WriteFiles(trust, filepath.Join(dir, "ca-key.pem")); err != nil {
		t.Fatal(err)
	}
	return func(id gpaxos.ID) *tlsconf.Source {
		ks := filepath.Join(dir, fmt.Sprintf("server%d.pem", id))
		if err := ca.IssueFile(ks, fmt.Sprintf("server %d", id), "Giraffe test", "127.0.0.1"); err != nil {
			t.Fatal(err)
		}
		set := tlsconf.Defaults(true)
		set.KeyStore, set.TrustStore = ks, trust
		src, err := tlsconf.New("ssl.quorum", set, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
}

func TestTLSRoundTripThreeServers(t *testing.T) {
	issue := quorumTLS(t, "quorum ca")
	trs := newCluster(t, 3, func(c *Config) { c.TLS = issue(c.ID) })
	for _, from := range trs {
		for _, to := range trs {
			if from != to {
				from.Send(msg(from.ID(), to.ID(), uint64(from.ID())))
			}
		}
	}
	for _, tr := range trs {
		for _, m := range recvN(t, tr, 2, 5*time.Second) {
			if m.To != tr.ID() || uint64(m.Commit) != uint64(m.From) {
				t.Fatalf("server %d received %+v", tr.ID(), m)
			}
		}
	}
}

// TestTLSRefusesUntrustedPeer: a member whose certificate another
// authority signed is refused in the TLS handshake, in both directions,
// with a log line on both sides, and none of its messages is delivered;
// the members that trust each other keep talking.
func TestTLSRefusesUntrustedPeer(t *testing.T) {
	issue := quorumTLS(t, "quorum ca")
	rogue := quorumTLS(t, "another ca")
	var goodLog, rogueLog syncBuffer
	good := newTransport(t, 1, func(c *Config) {
		c.TLS = issue(1)
		c.Logger = slog.New(slog.NewTextHandler(&goodLog, nil))
	})
	friend := newTransport(t, 2, func(c *Config) { c.TLS = issue(2) })
	bad := newTransport(t, 3, func(c *Config) {
		c.TLS = rogue(3)
		c.Logger = slog.New(slog.NewTextHandler(&rogueLog, nil))
	})
	book := map[gpaxos.ID]string{1: good.Addr().String(), 2: friend.Addr().String(), 3: bad.Addr().String()}
	for _, tr := range []*Transport{good, friend, bad} {
		if err := tr.SetPeers(book); err != nil {
			t.Fatal(err)
		}
	}
	bad.Send(msg(3, 1, 1))
	good.Send(msg(1, 3, 1))
	good.Send(msg(1, 2, 7))
	if m := recvN(t, friend, 1, 5*time.Second)[0]; m.From != 1 || m.Commit != 7 {
		t.Fatalf("friend received %+v", m)
	}
	waitFor(t, 5*time.Second, "refusals logged on both sides", func() bool {
		g, r := goodLog.String(), rogueLog.String()
		return strings.Contains(g, "refused connection: TLS handshake failed") &&
			strings.Contains(g, "cannot connect to peer") &&
			strings.Contains(r, "refused connection: TLS handshake failed") &&
			strings.Contains(r, "cannot connect to peer")
	})
	if !strings.Contains(goodLog.String(), "certificate signed by unknown authority") {
		t.Errorf("the member's log does not say why:\n%s", goodLog.String())
	}
	expectNothing(t, good, 100*time.Millisecond)
	expectNothing(t, bad, 0)
	if s := good.Stats(); s.Peers[3].Connected || s.Rejected == 0 {
		t.Fatalf("the untrusted member: connected %v, %d connections rejected", s.Peers[3].Connected, s.Rejected)
	}
}

// TestTLSRefusesPlainPeer: a member without TLS cannot talk to one with it,
// either way.
func TestTLSRefusesPlainPeer(t *testing.T) {
	issue := quorumTLS(t, "quorum ca")
	var secureLog syncBuffer
	secure := newTransport(t, 1, func(c *Config) {
		c.TLS = issue(1)
		c.Logger = slog.New(slog.NewTextHandler(&secureLog, nil))
	})
	plain := newTransport(t, 2, nil)
	book := map[gpaxos.ID]string{1: secure.Addr().String(), 2: plain.Addr().String()}
	secure.SetPeers(book)
	plain.SetPeers(book)
	plain.Send(msg(2, 1, 1))
	secure.Send(msg(1, 2, 1))
	waitFor(t, 5*time.Second, "the plain member refused", func() bool {
		return strings.Contains(secureLog.String(), "refused connection: TLS handshake failed")
	})
	expectNothing(t, secure, 100*time.Millisecond)
	expectNothing(t, plain, 0)
}
