package recipes

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// extraParticipants are participants of a double barrier that dbRun's
// caller starts (other clients' recipes): wait returns once they are done,
// and in, when not nil, is closed once they have all passed Enter.
type extraParticipants struct {
	wait func() error
	in   <-chan struct{}
}

// dbRun runs n Go participants of the double barrier at path on their own
// sessions, plus extra (started by the caller) that count in n. It checks
// that nobody leaves Enter before every participant has called it and
// nobody leaves Leave before every participant has called it.
func dbRun(t *testing.T, addr, path string, goParts, n int, extra func(ctx context.Context, entered, leaving *atomic.Int32) extraParticipants) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var entered, leaving atomic.Int32
	var x extraParticipants
	in := make(chan struct{})
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
			if err := waitIn(ctx, in); err != nil {
				errs <- fmt.Errorf("participant %d: the other participants did not pass Enter: %w", i, err)
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
	if extra != nil {
		x = extra(ctx, &entered, &leaving)
	}
	if x.in == nil {
		close(in)
	} else {
		go func() {
			select {
			case <-x.in:
				close(in)
			case <-ctx.Done():
			}
		}()
	}
	wg.Wait()
	if x.wait != nil {
		if err := x.wait(); err != nil {
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

// waitIn waits for in to be closed, or ctx to end.
func waitIn(ctx context.Context, in <-chan struct{}) error {
	select {
	case <-in:
		return nil
	case <-ctx.Done():
		return ctx.Err()
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
# Nobody leaves before all have entered (see the Go side): a kazoo
# participant's leave deletes "ready", which one still entering may miss.
entered = threading.Barrier(3)
def run(i):
    zk = KazooClient(hosts=hosts); zk.start()
    b = zk.DoubleBarrier(path, n, identifier="kazoo-%d" % i)
    b.enter()
    assert b.participating
    print("entered", flush=True)
    entered.wait()
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
	dbRun(t, addr, "/db/k", 3, 6, func(ctx context.Context, entered, leaving *atomic.Int32) extraParticipants {
		// kazoo's participants count as entered and leaving at once:
		// the Go ones check only that all six arrived before they pass.
		entered.Add(3)
		leaving.Add(3)
		// Nobody leaves before kazoo's participants have passed Enter:
		// kazoo's DoubleBarrier creates its node before it watches
		// "ready", and one slow between the two, which finds "ready"
		// deleted again by a participant leaving and fewer than six
		// children, waits for ever; on a loaded machine a Python thread
		// stalls that long. (Giraffe's DoubleBarrier watches first.)
		cmd := exec.CommandContext(ctx, py, script, addr, "/db/k", "6")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		in := make(chan struct{})
		var out strings.Builder
		done := make(chan error, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			k := 0
			for sc.Scan() {
				out.WriteString(sc.Text() + "\n")
				// The threads' prints may share a line.
				for range strings.Count(sc.Text(), "entered") {
					if k++; k == 3 {
						close(in)
					}
				}
			}
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("kazoo: %v\n%s%s", err, out.String(), stderr.String())
			}
			done <- err
		}()
		return extraParticipants{wait: func() error { return <-done }, in: in}
	})
}
