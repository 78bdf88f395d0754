package recipes

import (
	"context"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/lockcheck"
)

// TestLockZooKeeper runs the contention test of every lock kind against
// Apache ZooKeeper 3.9 (skipped unless ZK_LIB is set): the recipes must be
// correct on the reference server too, not only on Giraffe.
func TestLockZooKeeper(t *testing.T) {
	addr := lkStartZooKeeper(t)
	for _, k := range lkKinds {
		t.Run(k.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var hist lockcheck.History
			r := lkRun{addr: addr, kind: k, path: "/zk/" + k.name, clients: 50, rounds: 2, validate: true,
				opts: []LockOption{WithLockDelay(50 * time.Millisecond)}}
			r.run(t, ctx, &hist)
			lkCheck(t, &hist, lockcheck.Options{FIFO: k.fifo}, r.clients*r.rounds)
		})
	}
}
