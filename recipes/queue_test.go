package recipes

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// quOrderAndOnce checks priority order, then that concurrent consumers
// take each of 100 items from concurrent producers exactly once.
func quOrderAndOnce(t *testing.T, addr, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	q := NewQueue(lkConnect(t, addr), path)
	if _, ok, err := q.Get(ctx); err != nil || ok {
		t.Fatalf("get from an empty queue: %v %v", ok, err)
	}
	for _, it := range []struct {
		v string
		p int
	}{{"b", 100}, {"a", 5}, {"c", DefaultPriority}, {"d", 999}, {"e", 5}} {
		if err := q.Put(ctx, []byte(it.v), it.p); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := q.Len(ctx); err != nil || n != 5 {
		t.Fatalf("len %d %v", n, err)
	}
	var got []string
	for {
		v, ok, err := q.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, string(v))
	}
	if want := []string{"a", "e", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if err := q.Put(ctx, nil, 1000); err == nil {
		t.Fatal("priority 1000 accepted")
	}

	var mu sync.Mutex
	taken := map[string]int{}
	var wg sync.WaitGroup
	for c := range 4 {
		cq := NewQueue(lkConnect(t, addr), path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				v, err := cq.Take(ctx)
				if err != nil {
					t.Errorf("consumer %d: %v", c, err)
					return
				}
				mu.Lock()
				taken[string(v)]++
				mu.Unlock()
			}
		}()
	}
	for p := range 2 {
		pq := NewQueue(lkConnect(t, addr), path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := pq.Put(ctx, []byte(fmt.Sprintf("p%d-%d", p, i)), DefaultPriority); err != nil {
					t.Errorf("producer %d: %v", p, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(taken) != 100 {
		t.Fatalf("%d distinct items taken, want 100", len(taken))
	}
	for v, n := range taken {
		if n != 1 {
			t.Fatalf("%s taken %d times", v, n)
		}
	}
}

// TestQueueGiraffe and TestQueueZooKeeper: order, and exactly-once takes.
func TestQueueGiraffe(t *testing.T)   { quOrderAndOnce(t, lkStartGiraffe(t), "/q/g") }
func TestQueueZooKeeper(t *testing.T) { quOrderAndOnce(t, lkStartZooKeeper(t), "/q/z") }

// TestQueueWithKazoo: items put by Go come out of a kazoo Queue in
// priority order, and kazoo's come out of the Go one.
func TestQueueWithKazoo(t *testing.T) {
	py := lkKazooPython(t)
	addr := lkStartGiraffe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := NewQueue(lkConnect(t, addr), "/kq")
	for _, it := range []struct {
		v string
		p int
	}{{"late", 500}, {"first", 1}, {"mid", 100}} {
		if err := q.Put(ctx, []byte(it.v), it.p); err != nil {
			t.Fatal(err)
		}
	}
	const src = `import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start()
q = zk.Queue("/kq")
print(",".join(q.get().decode() for _ in range(3)))
q.put(b"k2", priority=7); q.put(b"k1", priority=3)
zk.stop()
`
	if got := lkKazooRun(t, py, src, addr); got != "first,mid,late" {
		t.Fatalf("kazoo got %q", got)
	}
	for _, want := range []string{"k1", "k2"} {
		v, ok, err := q.Get(ctx)
		if err != nil || !ok || string(v) != want {
			t.Fatalf("got %q %v %v, want %q", v, ok, err, want)
		}
	}
}
