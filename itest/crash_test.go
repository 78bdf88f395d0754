package itest

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/gozk"
)

// TestCrashKeepsAcknowledgedWrites kills a server under concurrent write
// load with SIGKILL at random moments, many times, and checks after every
// restart that every acknowledged write is present and that what is present
// is a prefix of what each writer issued.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) { runCrash(t, "/crash") }

// TestCrashKeepsAcknowledgedWeakWrites is the same with the writes in a
// weak namespace, answered once they are in the log, before its fsync:
// a process killed after writing the log loses none of them.
func TestCrashKeepsAcknowledgedWeakWrites(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "zoo.cfg")
	if err := os.WriteFile(cfg, []byte("giraffe.namespace.2=weak\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCrash(t, "/2/crash", "--config", cfg)
}

// runCrash kills a standalone server started with args under writes below
// root (see TestCrashKeepsAcknowledgedWrites).
func runCrash(t *testing.T, root string, args ...string) {
	if testing.Short() {
		t.Skip("kills real processes")
	}
	iterations := 12
	if v := os.Getenv("GIRAFFE_CRASH_ITERATIONS"); v != "" {
		iterations, _ = strconv.Atoi(v)
	}
	const writers = 8
	dir := t.TempDir()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	// acked[w] is the highest sequence number writer w saw acknowledged,
	// over all iterations; issued[w] the highest it ever sent.
	acked := make([]int, writers)
	issued := make([]int, writers)
	for w := range acked {
		acked[w], issued[w] = -1, -1
	}
	for it := 0; it < iterations; it++ {
		p, err := StartServer(dir, port, args...)
		if err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		t.Cleanup(p.Stop) // a failed check must not leave the server running
		checkState(t, p.Addr, root, writers, acked, issued, it)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				runWriter(p.Addr, root, w, &acked[w], &issued[w], stop)
			}(w)
		}
		time.Sleep(time.Duration(50+rng.Intn(400)) * time.Millisecond)
		p.Kill()
		close(stop)
		wg.Wait()
	}
	p, err := StartServer(dir, port, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	checkState(t, p.Addr, root, writers, acked, issued, iterations)
	total := 0
	for _, a := range acked {
		total += a + 1
	}
	t.Logf("%d kills, %d acknowledged writes, all present", iterations, total)
}

// runWriter creates root/w<w>/<seq> one at a time until the connection
// breaks, recording what was acknowledged.
func runWriter(addr, root string, w int, acked, issued *int, stop chan struct{}) {
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(gozk.Quiet{}))
	if err != nil {
		return
	}
	defer conn.Close()
	// Closing the client fails its pending call at once, instead of
	// letting it wait for a server that is gone.
	go func() { <-stop; conn.Close() }()
	base := fmt.Sprintf("%s/w%d", root, w)
	conn.Create(root, nil, 0, zk.WorldACL(zk.PermAll))
	conn.Create(base, nil, 0, zk.WorldACL(zk.PermAll))
	for seq := *acked + 1; ; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		if seq <= *issued {
			// A write whose outcome was unknown (the server died) may be
			// present: re-issuing it must not count it twice.
			if ok, _, err := conn.Exists(fmt.Sprintf("%s/%08d", base, seq)); err != nil {
				return
			} else if ok {
				*acked = seq
				continue
			}
		}
		*issued = max(*issued, seq)
		_, err := conn.Create(fmt.Sprintf("%s/%08d", base, seq), []byte(strings.Repeat("x", 100)), 0, zk.WorldACL(zk.PermAll))
		if err != nil {
			return
		}
		*acked = seq
	}
}

// checkState verifies that each writer's nodes are exactly 0..k with
// acked <= k <= issued.
func checkState(t *testing.T, addr, root string, writers int, acked, issued []int, it int) {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(gozk.Quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for w := 0; w < writers; w++ {
		kids, _, err := conn.Children(fmt.Sprintf("%s/w%d", root, w))
		if err == zk.ErrNoNode {
			kids = nil
		} else if err != nil {
			t.Fatalf("iteration %d: children of writer %d: %v", it, w, err)
		}
		sort.Strings(kids)
		for i, k := range kids {
			if k != fmt.Sprintf("%08d", i) {
				t.Fatalf("iteration %d: writer %d: node %d is %q: not a prefix of the issued writes", it, w, i, k)
			}
		}
		n := len(kids) - 1
		if n < acked[w] {
			t.Fatalf("iteration %d: writer %d: %d acknowledged writes, only %d present (lost acknowledged writes)",
				it, w, acked[w]+1, n+1)
		}
		if n > issued[w] {
			t.Fatalf("iteration %d: writer %d: %d present but only %d issued", it, w, n+1, issued[w]+1)
		}
		acked[w] = n // what is present now is durable and counts as acknowledged
	}
}
