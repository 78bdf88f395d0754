package itest

import (
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/members"
)

// TestReconnectToLaggingServer resumes a session on a server that has not
// yet applied the session's creation: the client's handshake through
// server A returned, then the client moves to B, whose incoming messages
// are delayed. SESSION_EXPIRED is final for a client, so B must not decide
// from its own late tree: it orders a sync through the log and looks again
// once it has applied everything committed before the reconnect.
func TestReconnectToLaggingServer(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	l, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, c, 10*time.Second)
	var a, b members.ID
	for _, s := range c.Servers {
		switch {
		case s.ID == l:
		case a == 0:
			a = s.ID
		default:
			b = s.ID
		}
	}
	if _, err := c.Fault(b, "delay * 150ms in"); err != nil {
		t.Fatal(err)
	}
	defer c.Fault(b, "heal")
	first, err := DialRaw(serverAddr(t, c, a), 10000, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	first.Close() // the connection, not the session
	again, err := DialRaw(serverAddr(t, c, b), 10000, first.SessionID, first.Passwd)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.SessionID != first.SessionID {
		t.Fatalf("reconnect to the lagging server: session %#x, want %#x (told the session expired)", again.SessionID, first.SessionID)
	}
}
