package recipes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dbRun runs n Go participants of the double barrier at path on their own
// sessions, plus extra (started by the caller) that count in n. It checks
// that nobody leaves Enter before every participant has called it and
// nobody leaves Leave before every participant has called it.
func dbRun(t *testing.T, addr, path string, goParts, n int, extra func(entered, leaving *atomic.Int32) func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var entered, leaving atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, goParts+1)
	for i := range goParts {
		b := NewDoubleBarrier(lkConnect(t, addr), path, n, fmt.Sprintf("go-%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Stagger the arrivals, so that early ones really wait.
			time.Sleep(time.Duration(i) * 20 * time.Millisecond)
			entered.Add(1)
			if err := b.Enter(ctx); err != nil {
				errs <- err
				return
			}
			if got := entered.Load(); got != int32(n) {
				errs <- fmt.Errorf("participant %d passed Enter with %d of %d entered", i, got, n)
				return
			}
			time.Sleep(time.Duration(goParts-i) * 20 * time.Millisecond)
			leaving.Add(1)
			if err := b.Leave(ctx); err != nil {
				errs <- err
				return
			}
			if got := leaving.Load(); got != int32(n) {
				errs <- fmt.Errorf("participant %d passed Leave with %d of %d leaving", i, got, n)
			}
		}()
	}
	var wait func() error
	if extra != nil {
		wait = extra(&entered, &leaving)
	}
	wg.Wait()
	if wait != nil {
		if err := wait(); err != nil {
			t.Fatal(err)
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	kids, _, err := lkConnect(t, addr).Children(ctx, path)
	if err != nil || len(kids) != 0 {
		t.Fatalf("children left: %v %v", kids, err)
	}
}

// TestDoubleBarrierGiraffe: six participants enter and leave together,
// twice on the same path.
func TestDoubleBarrierGiraffe(t *testing.T) {
	addr := lkStartGiraffe(t)
	dbRun(t, addr, "/db/g", 6, 6, nil)
	dbRun(t, addr, "/db/g", 6, 6, nil)
}

// TestDoubleBarrierZooKeeper: the same against ZooKeeper 3.9.
func TestDoubleBarrierZooKeeper(t *testing.T) {
	addr := lkStartZooKeeper(t)
	dbRun(t, addr, "/db/z", 6, 6, nil)
}

// TestDoubleBarrierWithKazoo: three Go participants and three kazoo
// DoubleBarrier participants make one barrier of six.
func TestDoubleBarrierWithKazoo(t *testing.T) {
	py := lkKazooPython(t)
	addr := lkStartGiraffe(t)
	script := filepath.Join(t.TempDir(), "kazoo_double_barrier.py")
	const src = `import sys, threading
from kazoo.client import KazooClient
hosts, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def run(i):
    zk = KazooClient(hosts=hosts); zk.start()
    b = zk.DoubleBarrier(path, n, identifier="kazoo-%d" % i)
    b.enter()
    assert b.participating
    print("entered", flush=True)
    b.leave()
    print("left", flush=True)
    zk.stop()
ts = [threading.Thread(target=run, args=(i,)) for i in range(3)]
[t.start() for t in ts]
[t.join() for t in ts]
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	dbRun(t, addr, "/db/k", 3, 6, func(entered, leaving *atomic.Int32) func() error {
		// kazoo's participants count as entered and leaving at once:
		// the Go ones check only that all six arrived before they pass.
		entered.Add(3)
		leaving.Add(3)
		cmd := exec.Command(py, script, addr, "/db/k", "6")
		out := make(chan error, 1)
		go func() {
			b, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("kazoo: %v\n%s", err, b)
			}
			out <- err
		}()
		return func() error { return <-out }
	})
}
