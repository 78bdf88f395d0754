package server

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestSessionMovedFencesOldServer: a client whose connection to one server
// breaks reconnects to another, which orders the session's move; a write
// of the session that the old server proposes afterwards (one the client
// sent before the break, still on its way) is refused with SESSIONMOVED on
// every replica, and writes through the new server go on.
func TestSessionMovedFencesOldServer(t *testing.T) {
	srvs := startInProcessEnsemble(t, 3, true)
	first, second := srvs[0].Addr().String(), srvs[1].Addr().String()

	var mu sync.Mutex
	var live net.Conn
	refused := ""
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if addr == refused {
			return nil, &net.OpError{Op: "dial", Net: network, Err: net.ErrClosed}
		}
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, addr)
		live = nc
		return nc, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, []string{first, second}, client.WithoutShuffle(), client.WithDialer(dial),
		client.WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Create(ctx, "/before", nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	id := c.SessionID()
	// The client is on server 1 unless that one was not ready yet.
	old, moved := srvs[0], srvs[1]
	mu.Lock()
	if live.RemoteAddr().String() == second {
		old, moved = srvs[1], srvs[0]
	}
	mu.Unlock()
	oldID, movedID := old.cfg.ServerID, moved.cfg.ServerID
	if owner := waitOwner(t, srvs[2], id, oldID); owner != oldID {
		t.Fatalf("owner after creation on server %d: %d", oldID, owner)
	}

	// Break the connection; the client moves to the other server.
	mu.Lock()
	refused = old.Addr().String()
	live.Close()
	mu.Unlock()
	if _, _, err := c.Create(ctx, "/after", nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		if _, _, err = c.Create(ctx, "/after", nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range srvs {
		if owner := waitOwner(t, s, id, movedID); owner != movedID {
			t.Fatalf("server %d: owner %d after the move to %d", s.cfg.ServerID, owner, movedID)
		}
	}

	// The old server proposes a write of the session now: it must not apply.
	res := make(chan txn.Result, 1)
	late := &txn.Entry{Session: id, Op: txn.Op{Kind: txn.KindCreate, OpCode: zkproto.OpCreate, Path: "/late",
		ACL: zkproto.OpenACLUnsafe}}
	if !old.pipe.submit(&proposal{entry: late, applied: func(r txn.Result, _ *txn.Entry) { res <- r }}) {
		t.Fatal("submit refused")
	}
	select {
	case r := <-res:
		if r.Err != zkproto.ErrSessionMoved {
			t.Fatalf("late write of a moved session: %v, want SESSIONMOVED", r.Err)
		}
	case <-ctx.Done():
		t.Fatal("late write never completed")
	}
	if _, err := c.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs {
		s.treeMu.RLock()
		_, code := s.tree.Exists("/late", nil)
		s.treeMu.RUnlock()
		if code != zkproto.ErrNoNode {
			t.Fatalf("server %d applied the late write", s.cfg.ServerID)
		}
	}
	if _, _, err := c.Create(ctx, "/still", nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatalf("write through the new server: %v", err)
	}

	// A move the old server proposed before the client left it, ordered
	// only now, takes the session from its old owner: it must fail and
	// leave the session where the client is.
	lateMove := make(chan txn.Result, 1)
	if !old.pipe.submit(&proposal{move: id, moveFrom: oldID, applied: func(r txn.Result, _ *txn.Entry) { lateMove <- r }}) {
		t.Fatal("submit refused")
	}
	if r := <-lateMove; r.Err != zkproto.ErrSessionMoved {
		t.Fatalf("late move: %v, want SESSIONMOVED", r.Err)
	}
	for _, s := range srvs {
		if owner := ownerOf(s, id); owner != movedID {
			t.Fatalf("server %d: owner %d after a late move, want %d", s.cfg.ServerID, owner, movedID)
		}
	}
	if _, _, err := c.Create(ctx, "/after-late-move", nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatalf("write after a late move: %v", err)
	}
}

func ownerOf(s *Server, id int64) gpaxos.ID {
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	return s.pipe.(*replicated).owners.Of(id)
}

func waitOwner(t *testing.T, s *Server, id int64, want gpaxos.ID) gpaxos.ID {
	deadline := time.Now().Add(10 * time.Second)
	for {
		o := ownerOf(s, id)
		if o == want || time.Now().After(deadline) {
			return o
		}
		time.Sleep(10 * time.Millisecond)
	}
}
