package recipes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// smContend has 8 contenders on their own sessions take one of 3 leases
// three times each: never more than 3 hold at once, and the leases are
// shared (more than one holds at some moment).
func smContend(t *testing.T, addr, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var holders, most atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		s := NewSemaphore(lkConnect(t, addr), path, 3, fmt.Sprintf("c%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if err := s.Acquire(ctx); err != nil {
					errs <- err
					return
				}
				n := holders.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(30 * time.Millisecond)
				holders.Add(-1)
				if err := s.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := most.Load(); m > 3 || m < 2 {
		t.Fatalf("at most %d holders at once, want 2 or 3", m)
	}
	err := NewSemaphore(lkConnect(t, addr), path, 5, "x").Acquire(ctx)
	if !errors.Is(err, ErrLeaseMismatch) {
		t.Fatalf("a contender asking for 5 leases of a 3-lease semaphore: %v", err)
	}
}

// TestSemaphoreGiraffe: leases are bounded and shared.
func TestSemaphoreGiraffe(t *testing.T) { smContend(t, lkStartGiraffe(t), "/sem/g") }

// TestSemaphoreZooKeeper: the same against ZooKeeper 3.9.
func TestSemaphoreZooKeeper(t *testing.T) { smContend(t, lkStartZooKeeper(t), "/sem/z") }

// TestSemaphoreWithKazoo: while kazoo holds both leases of a 2-lease
// semaphore, a Go contender waits; it gets a lease once kazoo releases,
// and kazoo lists the Go holder.
func TestSemaphoreWithKazoo(t *testing.T) {
	py := lkKazooPython(t)
	addr := lkStartGiraffe(t)
	script := filepath.Join(t.TempDir(), "kazoo_semaphore.py")
	const src = `import sys, time
from kazoo.client import KazooClient
hosts, path = sys.argv[1], sys.argv[2]
zs = [KazooClient(hosts=hosts) for _ in range(2)]
sems = []
for i, zk in enumerate(zs):
    zk.start()
    s = zk.Semaphore(path, identifier="kazoo-%d" % i, max_leases=2)
    assert s.acquire(timeout=10)
    sems.append(s)
print("held", flush=True)
time.sleep(1)
for s in sems:
    s.release()
print("released", flush=True)
line = sys.stdin.readline()
print("holders", ",".join(sorted(zs[0].Semaphore(path, max_leases=2).lease_holders())), flush=True)
[zk.stop() for zk in zs]
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script, addr, "/sem/k")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "held" {
		t.Fatalf("kazoo: %q", lines.Text())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	s := NewSemaphore(lkConnect(t, addr), "/sem/k", 2, "go")
	if err := s.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 700*time.Millisecond {
		t.Fatalf("got a lease after %v while kazoo held both", d)
	}
	fmt.Fprintln(stdin, "go")
	for lines.Scan() {
		if f := lines.Text(); len(f) > 8 && f[:8] == "holders " {
			got := []string{f[8:]}
			if !slices.Equal(got, []string{"go"}) {
				t.Fatalf("kazoo sees holders %v, want [go]", got)
			}
			holders, err := s.Holders(ctx)
			sort.Strings(holders)
			if err != nil || !slices.Equal(holders, []string{"go"}) {
				t.Fatalf("Holders: %v %v", holders, err)
			}
			return
		}
	}
	t.Fatal("kazoo never listed the holders")
}
