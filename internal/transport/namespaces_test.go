package transport

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/nsmap"
)

func nsTable(t *testing.T, decls ...string) nsmap.Table {
	t.Helper()
	var tab nsmap.Table
	for i := 0; i < len(decls); i += 2 {
		l, err := nsmap.ParseLevel(decls[i+1])
		if err != nil {
			t.Fatal(err)
		}
		if err := tab.Declare(decls[i], l); err != nil {
			t.Fatal(err)
		}
	}
	return tab
}

func TestHelloNamespaces(t *testing.T) {
	// Without namespaces a hello is magic, version, from, to, the
	// cluster name and the dialer's address.
	plain := hello{Cluster: "c", From: 1, To: 2}.encode()
	if want := []byte("GRFP\x02\x01\x02\x01c\x00"); !bytes.Equal(plain, want) {
		t.Fatalf("hello without namespaces: % x, want % x", plain, want)
	}
	// A version 1 hello has no address.
	if got, err := decodeHello([]byte("GRFP\x01\x01\x02\x01c")); err != nil || got != (hello{Cluster: "c", From: 1, To: 2}) {
		t.Fatalf("version 1 hello: %+v, %v", got, err)
	}
	tab := nsTable(t, "1", "strong", "2", "weak")
	h := hello{Cluster: "c", From: 1, To: 2, Addr: "127.0.0.1:2888", Namespaces: tab.Hash(), NamespacesText: tab.String()}
	got, err := decodeHello(h.encode())
	if err != nil || got != h {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	long := hello{Cluster: "c", From: 1, To: 2, Namespaces: 7, NamespacesText: strings.Repeat("x", 5000)}
	got, err = decodeHello(long.encode())
	if err != nil || len(got.NamespacesText) != maxNamespacesText || got.Namespaces != 7 {
		t.Fatalf("long description: %d bytes, %v", len(got.NamespacesText), err)
	}
	zeroHash := append(append([]byte(nil), plain...), make([]byte, 8)...)
	zeroHash = append(zeroHash, 0)
	withAddr := len(plain) + len(h.Addr)
	for _, bad := range [][]byte{
		append(h.encode(), 'x'),             // trailing byte
		h.encode()[:withAddr+4],             // truncated hash
		h.encode()[:withAddr+9],             // text shorter than its length
		h.encode()[:len(plain)+3],           // address shorter than its length
		zeroHash,                            // a table of hash 0 is no table
		[]byte("GRFP\x03\x01\x02\x01c\x00"), // unknown version
	} {
		if _, err := decodeHello(bad); err == nil {
			t.Errorf("decodeHello(% x) accepted", bad)
		}
	}
}

// TestHandshakeRefusesOtherNamespaceTable: a peer configured with another
// namespace table (or none) is refused, and both servers log a line that
// names both tables; equal tables connect.
func TestHandshakeRefusesOtherNamespaceTable(t *testing.T) {
	paper := nsTable(t, "1", "strong", "2", "weak")
	allStrong := nsTable(t, "1", "strong", "2", "strong")
	for _, tc := range []struct {
		name             string
		dialer, acceptor nsmap.Table
		accept           bool
	}{
		{name: "other level", dialer: allStrong, acceptor: paper},
		{name: "dialer declares none", acceptor: paper},
		{name: "acceptor declares none", dialer: paper},
		{name: "equal tables", dialer: paper, acceptor: nsTable(t, "2", "weak", "1", "strong"), accept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dialLog, acceptLog syncBuffer
			b := newTransport(t, 2, func(c *Config) {
				c.Peers = map[gpaxos.ID]string{1: "127.0.0.1:1"}
				c.Namespaces = tc.acceptor
				c.Logger = slog.New(slog.NewTextHandler(&acceptLog, nil))
			})
			a := newTransport(t, 1, func(c *Config) {
				c.Peers = map[gpaxos.ID]string{2: b.Addr().String()}
				c.Namespaces = tc.dialer
				c.Logger = slog.New(slog.NewTextHandler(&dialLog, nil))
			})
			a.Send(msg(1, 2, 1))
			if tc.accept {
				recvN(t, b, 1, 5*time.Second)
				return
			}
			waitFor(t, 5*time.Second, "a refusal logged on both sides", func() bool {
				return strings.Contains(acceptLog.String(), "namespace tables differ") &&
					strings.Contains(dialLog.String(), "namespace tables differ")
			})
			expectNothing(t, b, 100*time.Millisecond)
			for side, log := range map[string]string{"dialer": dialLog.String(), "acceptor": acceptLog.String()} {
				for _, tab := range []nsmap.Table{tc.dialer, tc.acceptor} {
					if !strings.Contains(log, "declares "+tab.String()) {
						t.Errorf("%s's log does not name table %s:\n%s", side, tab, log)
					}
				}
			}
		})
	}
}

// FuzzDecodeHello checks that decodeHello never panics and that what it
// accepts survives an encode/decode round trip.
func FuzzDecodeHello(f *testing.F) {
	f.Add(hello{Cluster: "c", From: 1, To: 2}.encode())
	f.Add(hello{Cluster: "c", From: 1, To: 2, Addr: "[::1]:2888", Namespaces: 9, NamespacesText: "1=strong,2=weak"}.encode())
	f.Add([]byte("GRFP\x01\x01\x02\x01c"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHello(b)
		if err != nil {
			return
		}
		back, err := decodeHello(h.encode())
		if err != nil || back != h {
			t.Fatalf("round trip of %+v: %+v, %v", h, back, err)
		}
	})
}
