package recipes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestLockLeavesNoOrphan: a test-and-set or queue Lock whose create
// reaches the server but whose answer is lost, and which then gives up,
// must not leave its node behind once the connection is back: no later
// attempt would take that node for its own, so every contender would wait
// on it until the session ended. Another client acquires soon after, and so does the
// same client's next attempt.
func TestLockLeavesNoOrphan(t *testing.T) {
	for _, kind := range []string{"tas-sync", "tas-async", "queue-sync", "queue-async"} {
		t.Run(kind, func(t *testing.T) {
			addr := lkStartGiraffe(t)
			px := lkNewProxy(t, addr)
			a := lkConnect(t, px.addr())
			b := lkConnect(t, addr)
			dir := "/orphan-" + kind
			la, ok := NewLockOfKind(kind, a, dir)
			if !ok {
				t.Fatalf("no lock of kind %s", kind)
			}
			lb, _ := NewLockOfKind(kind, b, dir)
			if _, _, err := b.Create(context.Background(), dir, nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
				t.Fatal(err)
			}

			// The create arrives and takes effect; its answer is dropped,
			// and the attempt gives up.
			px.muted.Store(true)
			ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
			err := la.Lock(ctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a's attempt with its answers lost: %v, want the deadline", err)
			}
			if kids, _, err := b.Children(context.Background(), dir); err != nil || len(kids) != 1 {
				t.Fatalf("a's create did not reach the server (%v, %v): the test shows nothing", kids, err)
			}
			// The connection breaks and comes back, within the session.
			px.cutOff()
			px.muted.Store(false)
			px.restore()

			ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := lb.Lock(ctx); err != nil {
				t.Fatalf("b waited on a's abandoned node: %v", err)
			}
			if err := lb.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := la.Lock(ctx); err != nil {
				t.Fatalf("a's next attempt: %v", err)
			}
			if a.State() != client.StateConnected {
				t.Fatalf("a's session: %v", a.State())
			}
		})
	}
}
