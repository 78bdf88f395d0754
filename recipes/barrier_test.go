package recipes

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// brWaiters raises the barrier at path, starts 10 waiters on their own
// sessions, checks that none passes while it is up, lowers it with lower,
// and checks that all pass.
func brWaiters(t *testing.T, addr, path string, lower func(t *testing.T)) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := NewBarrier(lkConnect(t, addr), path)
	if err := b.Create(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx); err != nil {
		t.Fatalf("raising a raised barrier: %v", err)
	}
	var passed atomic.Int32
	done := make(chan error, 10)
	for range 10 {
		w := NewBarrier(lkConnect(t, addr), path)
		go func() {
			err := w.Wait(ctx)
			passed.Add(1)
			done <- err
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if n := passed.Load(); n != 0 {
		t.Fatalf("%d waiters passed a raised barrier", n)
	}
	lower(t)
	for range 10 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if up, err := b.Remove(ctx); err != nil || up {
		t.Fatalf("removing a lowered barrier: up=%v err=%v", up, err)
	}
	if err := NewBarrier(lkConnect(t, addr), path).Wait(ctx); err != nil {
		t.Fatalf("waiting on a lowered barrier: %v", err)
	}
}

func brRemoveWithGo(addr, path string) func(t *testing.T) {
	return func(t *testing.T) {
		up, err := NewBarrier(lkConnect(t, addr), path).Remove(context.Background())
		if err != nil || !up {
			t.Fatalf("remove: up=%v err=%v", up, err)
		}
	}
}

// TestBarrierGiraffe: waiters block while the barrier is up and all pass
// when it is removed.
func TestBarrierGiraffe(t *testing.T) {
	addr := lkStartGiraffe(t)
	brWaiters(t, addr, "/barriers/g", brRemoveWithGo(addr, "/barriers/g"))
}

// TestBarrierZooKeeper: the same against ZooKeeper 3.9.
func TestBarrierZooKeeper(t *testing.T) {
	addr := lkStartZooKeeper(t)
	brWaiters(t, addr, "/barriers/z", brRemoveWithGo(addr, "/barriers/z"))
}

// TestBarrierWithKazoo: Go waiters pass when a kazoo Barrier on the same
// path is removed.
func TestBarrierWithKazoo(t *testing.T) {
	py := lkKazooPython(t)
	addr := lkStartGiraffe(t)
	script := filepath.Join(t.TempDir(), "kazoo_barrier.py")
	const src = "import sys\nfrom kazoo.client import KazooClient\nzk = KazooClient(hosts=sys.argv[1]); zk.start()\nassert zk.Barrier(sys.argv[2]).remove()\nzk.stop()\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	brWaiters(t, addr, "/barriers/k", func(t *testing.T) {
		if out, err := exec.Command(py, script, addr, "/barriers/k").CombinedOutput(); err != nil {
			t.Fatalf("kazoo Barrier.remove: %v\n%s", err, out)
		}
	})
}
