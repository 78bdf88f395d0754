package recipes

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// ctAddConcurrently has 10 sessions add 1 twenty times each to the counter
// at path on addr and checks that none of the 200 additions is lost and
// that the values each Add saw are all distinct (every change applied
// exactly once, in some order).
func ctAddConcurrently(t *testing.T, addr, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const sessions, adds = 10, 20
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for i := 0; i < sessions; i++ {
		conn := lkConnect(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := NewCounter(conn, path)
			for range adds {
				_, post, err := c.Add(ctx, 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[post] {
					t.Errorf("two additions both produced %d", post)
				}
				seen[post] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	v, err := NewCounter(lkConnect(t, addr), path).Value(ctx)
	if err != nil || v != sessions*adds {
		t.Fatalf("counter = %d, %v; want %d", v, err, sessions*adds)
	}
}

// TestCounterGiraffe: concurrent additions on Giraffe lose nothing.
func TestCounterGiraffe(t *testing.T) { ctAddConcurrently(t, lkStartGiraffe(t), "/counters/g") }

// TestCounterZooKeeper: the same against ZooKeeper 3.9.
func TestCounterZooKeeper(t *testing.T) { ctAddConcurrently(t, lkStartZooKeeper(t), "/counters/z") }

// ctKazooScript adds 1 to a kazoo Counter n times.
const ctKazooScript = `
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start()
c = zk.Counter(sys.argv[2])
for _ in range(int(sys.argv[3])):
    c += 1
zk.stop()
print("done", flush=True)
`

// TestCounterWithKazoo: a kazoo Counter and Go counters add to one path at
// the same time; the total counts both (same layout, same encoding).
func TestCounterWithKazoo(t *testing.T) {
	py := lkKazooPython(t)
	addr := lkStartGiraffe(t)
	script := filepath.Join(t.TempDir(), "kazoo_counter.py")
	if err := os.WriteFile(script, []byte(ctKazooScript), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kazoo := exec.CommandContext(ctx, py, script, addr, "/counters/k", "100")
	kazoo.Stderr = os.Stderr
	if err := kazoo.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		conn := lkConnect(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := NewCounter(conn, "/counters/k")
			for range 25 {
				if _, _, err := c.Add(ctx, 1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := kazoo.Wait(); err != nil {
		t.Fatalf("kazoo: %v", err)
	}
	v, err := NewCounter(lkConnect(t, addr), "/counters/k").Value(ctx)
	if err != nil || v != 200 {
		t.Fatalf("counter = %d, %v; want 200 (100 from kazoo, 100 from Go)", v, err)
	}
}
