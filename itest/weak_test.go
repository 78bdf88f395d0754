package itest

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/launcher"
)

// metric reads one counter or gauge of a server's /metrics, 0 when absent.
func metric(t *testing.T, s launcher.Server, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + s.MetricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("server %d metrics: %v", s.ID, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("server %d: %s: %v", s.ID, sc.Text(), err)
			}
			return f
		}
	}
	return 0
}

// weakWrite is one create of a weak writer, as its client saw it.
type weakWrite struct {
	n       int   // the writer's count: its path is /2/w<writer>/k<n>
	session int64 // the session it went through (0: not known for sure)
	acked   bool
}

// weakWriter creates /2/w<i>/k1, k2, ... one at a time, and records which
// session each create went through and whether it was acknowledged. Its
// go-zookeeper client reconnects, and starts a new session when told its
// session ended, by itself.
type weakWriter struct {
	i      int
	mu     sync.Mutex
	writes []weakWrite
}

func (w *weakWriter) run(cl *zk.Conn, stop <-chan struct{}) {
	for n := 1; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		sid := cl.SessionID()
		_, err := cl.Create(fmt.Sprintf("/2/w%d/k%06d", w.i, n), nil, 0, zk.WorldACL(zk.PermAll))
		ww := weakWrite{n: n, acked: err == nil}
		if cl.SessionID() == sid {
			ww.session = sid // a request is answered on the connection it went on
		}
		w.mu.Lock()
		w.writes = append(w.writes, ww)
		w.mu.Unlock()
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// checkPrefix checks the weak guarantee on one writer's history against
// the nodes that survived (by count): for each session, the acknowledged
// writes that survive are a prefix of the acknowledged writes. It returns
// how many acknowledged writes are missing.
func (w *weakWriter) checkPrefix(t *testing.T, survived map[int]bool) (missing int) {
	t.Helper()
	bySession := map[int64][]weakWrite{}
	for _, ww := range w.writes {
		if ww.acked && ww.session != 0 {
			bySession[ww.session] = append(bySession[ww.session], ww)
		}
	}
	for sid, ws := range bySession {
		firstMissing := 0
		for _, ww := range ws {
			switch {
			case !survived[ww.n] && firstMissing == 0:
				firstMissing = ww.n
				missing++
			case !survived[ww.n]:
				missing++
			case firstMissing != 0:
				t.Errorf("writer %d, session 0x%x: write k%d survived, but k%d, acknowledged before it, is lost",
					w.i, sid, ww.n, firstMissing)
				return missing
			}
		}
	}
	return missing
}

// TestWeakWritesSurviveAsPrefix runs weak writers, one session each, on
// every server of a classic-3 ensemble while the leader is killed again
// and again, every other time after it was cut off from the others for a
// moment: the writes it answered meanwhile, of the clients connected to
// it, reach no other server and are lost. The weak guarantee: for each
// session, the acknowledged writes that survive are a prefix of the
// acknowledged ones (a session whose acknowledged write was lost ends);
// every replica ends with the same tree at the same zxid; no result
// answered early differs from the one its write had once applied.
func TestWeakWritesSurviveAsPrefix(t *testing.T) {
	c := StartEnsemble(t, Classic3, paperNamespaces...)
	if _, err := Leader(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	all := addrs(c)
	setup := zkConnect(t, all)
	const writers = 6
	ws := make([]*weakWriter, writers)
	for i := range ws {
		ws[i] = &weakWriter{i: i}
		if _, err := setup.Create(fmt.Sprintf("/2/w%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range ws {
		order := append(append([]string{}, all[w.i%len(all):]...), all[:w.i%len(all)]...)
		cl, _, err := zk.Connect(order, 4*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(cl, stop)
		}()
	}
	kills := 0
	for deadline := time.Now().Add(12 * time.Second); time.Now().Before(deadline); {
		time.Sleep(1500 * time.Millisecond)
		l, err := Leader(c, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if kills%2 == 1 {
			t.Logf("leader %d cut off from the others", l)
			if _, err := c.Fault(l, "block *"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("SIGKILL leader %d", l)
		if err := c.Kill(l); err != nil {
			t.Fatal(err)
		}
		kills++
		time.Sleep(500 * time.Millisecond)
		if err := c.Restart(l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Leader(c, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // writes after the last kill
	close(stop)
	wg.Wait()
	t.Logf("every replica: %s", waitEqualDigests(t, c, 30*time.Second))

	reader := zkConnect(t, all)
	if _, err := reader.Sync("/2"); err != nil {
		t.Fatal(err)
	}
	acked, missing := 0, 0
	for _, w := range ws {
		kids, _, err := reader.Children(fmt.Sprintf("/2/w%d", w.i))
		if err != nil {
			t.Fatal(err)
		}
		survived := map[int]bool{}
		for _, k := range kids {
			n, err := strconv.Atoi(strings.TrimPrefix(k, "k"))
			if err != nil {
				t.Fatalf("unexpected node %s", k)
			}
			survived[n] = true
		}
		for _, ww := range w.writes {
			if ww.acked {
				acked++
			}
		}
		missing += w.checkPrefix(t, survived)
	}
	var early, lost, mismatch float64
	for _, s := range c.Servers {
		early += metric(t, s, "giraffe_weak_early_replies_total")
		lost += metric(t, s, "giraffe_weak_possibly_lost_total")
		mismatch += metric(t, s, "giraffe_weak_mismatch_total")
	}
	t.Logf("%d leader kills; %d writes acknowledged, %d of them lost; since the last restarts: %v answered early, %v counted possibly lost",
		kills, acked, missing, early, lost)
	if mismatch != 0 {
		t.Fatalf("%v weak writes answered with another result than they had once applied", mismatch)
	}
	if acked < 100 || early == 0 {
		t.Fatalf("too little progress: %d writes acknowledged, %v answered early", acked, early)
	}
	if missing == 0 {
		t.Fatal("no acknowledged write was lost: the leaders cut off answered none")
	}
}

// TestWeakWritesWithoutFaults: with no fault, every weak write a client was
// told succeeded is there, on every replica, and reads its own writes; in
// both modes that answer weak writes before they are applied.
func TestWeakWritesWithoutFaults(t *testing.T) {
	for _, mode := range []string{"shortcircuit", "dynamicfsync"} {
		t.Run(mode, func(t *testing.T) {
			runWeakWithoutFaults(t, append([]string{"giraffe.weakMode=" + mode}, paperNamespaces...))
		})
	}
}

func runWeakWithoutFaults(t *testing.T, extra []string) {
	c := StartEnsemble(t, Classic3, extra...)
	if _, err := Leader(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	conns := connectEach(t, c)
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for i, cl := range conns {
		if _, err := cl.Create(fmt.Sprintf("/2/r%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 200; n++ {
				p := fmt.Sprintf("/2/r%d/k%04d", i, n)
				if _, err := cl.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
					errs <- err
					return
				}
				if d, _, err := cl.Get(p); err != nil || string(d) != p {
					errs <- fmt.Errorf("server %d: read of own write %s: %q %v", i+1, p, d, err)
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
	t.Logf("every replica: %s", waitEqualDigests(t, c, 20*time.Second))
	for i, cl := range conns {
		if _, err := cl.Sync("/2"); err != nil {
			t.Fatal(err)
		}
		for j := range conns {
			kids, _, err := cl.Children(fmt.Sprintf("/2/r%d", j))
			if err != nil || len(kids) != 200 {
				t.Fatalf("server %d: /2/r%d has %d children, %v", i+1, j, len(kids), err)
			}
		}
	}
	var early float64
	for _, s := range c.Servers {
		early += metric(t, s, "giraffe_weak_early_replies_total")
		if m := metric(t, s, "giraffe_weak_mismatch_total"); m != 0 {
			t.Fatalf("server %d: %v mismatches", s.ID, m)
		}
		if l := metric(t, s, "giraffe_weak_possibly_lost_total"); l != 0 {
			t.Fatalf("server %d: %v possibly lost without a fault", s.ID, l)
		}
	}
	if early < 300 {
		t.Fatalf("%v of 600 weak writes answered early", early)
	}
}

// TestLinearizableStrongBesideWeakLoad runs the linearizability test on
// registers in the strong namespace /1 of a classic-3 ensemble while weak
// writers load the weak namespace /2 through every server, under the same
// faults (kills, pauses, partitions): the strong namespace's synced reads
// and writes stay linearizable.
func TestLinearizableStrongBesideWeakLoad(t *testing.T) {
	var weakAcked atomic.Int64
	defer func() {
		t.Logf("%d weak writes acknowledged meanwhile", weakAcked.Load())
		if !t.Failed() && weakAcked.Load() == 0 {
			t.Fatal("the weak writers made no progress")
		}
	}()
	runLinearizable(t, Classic3, 12*time.Second, linOptions{extra: paperNamespaces, parent: "/1",
		load: func(c *launcher.Cluster, stop <-chan struct{}) {
			loadCreates(c, stop, 3, func(i, n int) string { return fmt.Sprintf("/2/load%d-%d", i, n) }, nil, &weakAcked)
		}})
}
