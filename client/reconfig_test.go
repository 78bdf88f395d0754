package client

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/testport"
	"github.com/giraffe-coord/giraffe/server"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// superDigest is the super user "super" with password "test".
const superDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="

// reconfigMember is one server of the test ensemble: its id, its peer
// port and its client address.
type reconfigMember struct {
	id     server.ID
	peer   int
	client string
	srv    *server.Server
}

// spec is the member as a dynamic configuration line.
func (m reconfigMember) spec() string {
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d;%s", m.id, m.peer, m.peer, m.client)
}

// startReconfigEnsemble starts a classic ensemble of three in-process
// servers over loopback TCP that allows reconfig to the super user.
func startReconfigEnsemble(t *testing.T) []reconfigMember {
	t.Helper()
	var ms []reconfigMember
	var peers []server.Member
	base, err := testport.Range(3)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		port := base + i - 1
		ms = append(ms, reconfigMember{id: server.ID(i), peer: port})
		peers = append(peers, server.Member{ID: server.ID(i), Peer: fmt.Sprintf("127.0.0.1:%d", port)})
	}
	for i := range ms {
		cfg := server.DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.ClientAddr = "127.0.0.1"
		cfg.ClientPort = 0
		cfg.ForceSync = false
		cfg.TickTime = 100 * time.Millisecond
		cfg.ServerID = ms[i].id
		cfg.ReconfigEnabled = true
		cfg.SuperDigest = superDigest
		cfg.Ensemble = server.Ensemble{Members: peers, Shape: server.Shape{Classic: true}, Tick: 10 * time.Millisecond}
		s, err := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ms[i].srv, ms[i].client = s, s.Addr().String()
	}
	return ms
}

// serverMode asks a server its role with the srvr four-letter word.
func serverMode(addr string) string {
	kv, _ := launcher.FourLetter(addr, "srvr", 5*time.Second)
	return kv["Mode"]
}

// TestReconfig changes a classic-3 ensemble's membership through its
// leader with a non-incremental reconfig, after the refusals a client can
// get (no authorization, a stale configuration version), and an
// incremental reconfig that would leave one server is refused.
func TestReconfig(t *testing.T) {
	ms := startReconfigEnsemble(t)
	var leader reconfigMember
	deadline := time.Now().Add(20 * time.Second)
	for leader.srv == nil {
		for _, m := range ms {
			if serverMode(m.client) == "leader" {
				leader = m
			}
		}
		if leader.srv == nil && time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var rest []reconfigMember
	for _, m := range ms {
		if m.id != leader.id {
			rest = append(rest, m)
		}
	}
	gone, kept := rest[0], rest[1]
	c := connect(t, []string{leader.client})
	ctx := ctxT(t)
	newMembers := []string{leader.spec(), kept.spec()}
	leave := []string{fmt.Sprint(gone.id)}

	_, _, err := c.Reconfig(ctx, newMembers, AnyConfig)
	wantCode(t, "reconfig without authorization", err, zkproto.ErrNoAuth)
	if err := c.AddAuth(ctx, "digest", []byte("super:test")); err != nil {
		t.Fatal(err)
	}
	_, st0, err := c.Get(ctx, ConfigNode)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.IncrementalReconfig(ctx, nil, leave, st0.Mzxid+1)
	wantCode(t, "incremental reconfig from a stale version", err, zkproto.ErrBadVersion)

	data, st, err := c.Reconfig(ctx, newMembers, AnyConfig)
	if err != nil {
		t.Fatalf("reconfig to %v: %v", newMembers, err)
	}
	cfg := string(data)
	if strings.Contains(cfg, fmt.Sprintf("server.%d=", gone.id)) || !strings.Contains(cfg, fmt.Sprintf("server.%d=", kept.id)) ||
		!strings.Contains(cfg, fmt.Sprintf("version=%x", st.Mzxid)) {
		t.Fatalf("configuration after removing server %d (mzxid %x):\n%s", gone.id, st.Mzxid, cfg)
	}
	if got, _, err := c.Get(ctx, ConfigNode); err != nil || string(got) != cfg {
		t.Fatalf("%s reads %q, %v; reconfig answered %q", ConfigNode, got, err, cfg)
	}

	_, _, err = c.IncrementalReconfig(ctx, nil, []string{fmt.Sprint(kept.id)}, st.Mzxid)
	wantCode(t, "incremental reconfig leaving one server", err, zkproto.ErrBadArguments)
}
