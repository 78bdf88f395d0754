package recipes

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// lqReliable: priorities order the items; a consumer that releases an
// item or whose session ends gives it back; four consumers consume 40
// items from a producer exactly once.
func lqReliable(t *testing.T, addr, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	q := NewLockingQueue(lkConnect(t, addr), path)
	if err := q.Put(ctx, []byte("low"), 500); err != nil {
		t.Fatal(err)
	}
	if err := q.PutAll(ctx, [][]byte{[]byte("high1"), []byte("high2")}, 1); err != nil {
		t.Fatal(err)
	}
	v, err := q.Get(ctx)
	if err != nil || string(v) != "high1" {
		t.Fatalf("get: %q %v", v, err)
	}
	// Another consumer skips the locked item.
	lost := lkConnect(t, addr)
	other := NewLockingQueue(lost, path)
	if v, err := other.Get(ctx); err != nil || string(v) != "high2" {
		t.Fatalf("second consumer: %q %v", v, err)
	}
	if ok, err := q.Release(ctx); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	if v, err := q.Get(ctx); err != nil || string(v) != "high1" {
		t.Fatalf("after release: %q %v", v, err)
	}
	if ok, err := q.Consume(ctx); err != nil || !ok {
		t.Fatalf("consume: %v %v", ok, err)
	}
	// The second consumer's session ends: its item is free again.
	lost.Close()
	third := NewLockingQueue(lkConnect(t, addr), path)
	if v, err := third.Get(ctx); err != nil || string(v) != "high2" {
		t.Fatalf("after the holder's session ended: %q %v", v, err)
	}
	if ok, _ := third.Consume(ctx); !ok {
		t.Fatal("consume high2")
	}
	if v, err := third.Get(ctx); err != nil || string(v) != "low" {
		t.Fatalf("last: %q %v", v, err)
	}
	third.Consume(ctx)
	if n, err := q.Len(ctx); err != nil || n != 0 {
		t.Fatalf("len %d %v", n, err)
	}

	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for c := range 4 {
		cq := NewLockingQueue(lkConnect(t, addr), path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				v, err := cq.Get(ctx)
				if err != nil {
					t.Errorf("consumer %d: %v", c, err)
					return
				}
				if ok, err := cq.Consume(ctx); err != nil || !ok {
					t.Errorf("consumer %d: consume %v %v", c, ok, err)
					return
				}
				mu.Lock()
				got[string(v)]++
				mu.Unlock()
			}
		}()
	}
	pq := NewLockingQueue(lkConnect(t, addr), path)
	for i := range 40 {
		if err := pq.Put(ctx, []byte(fmt.Sprint(i)), DefaultPriority); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if len(got) != 40 {
		t.Fatalf("%d distinct items consumed, want 40", len(got))
	}
	for v, n := range got {
		if n != 1 {
			t.Fatalf("%s consumed %d times", v, n)
		}
	}
}

// TestLockingQueueGiraffe and TestLockingQueueZooKeeper: reliable takes.
func TestLockingQueueGiraffe(t *testing.T)   { lqReliable(t, lkStartGiraffe(t), "/lq/g") }
func TestLockingQueueZooKeeper(t *testing.T) { lqReliable(t, lkStartZooKeeper(t), "/lq/z") }

// TestLockingQueueWithKazoo: items put by Go are taken and consumed by a
// kazoo LockingQueue in priority order, and kazoo's by Go.
func TestLockingQueueWithKazoo(t *testing.T) {
	py := lkKazooPython(t)
	addr := lkStartGiraffe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := NewLockingQueue(lkConnect(t, addr), "/klq")
	for _, it := range []struct {
		v string
		p int
	}{{"b", 50}, {"a", 5}} {
		if err := q.Put(ctx, []byte(it.v), it.p); err != nil {
			t.Fatal(err)
		}
	}
	const src = `import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start()
q = zk.LockingQueue("/klq")
out = []
for _ in range(2):
    out.append(q.get(5).decode()); assert q.consume()
print(",".join(out))
q.put(b"k", priority=9)
zk.stop()
`
	if got := lkKazooRun(t, py, src, addr); got != "a,b" {
		t.Fatalf("kazoo got %q", got)
	}
	if v, err := q.Get(ctx); err != nil || string(v) != "k" {
		t.Fatalf("got %q %v", v, err)
	}
	if ok, err := q.Consume(ctx); err != nil || !ok {
		t.Fatalf("consume: %v %v", ok, err)
	}
}
