package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	dto "github.com/prometheus/client_model/go"

	"github.com/giraffe-coord/giraffe/itest"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// startWeakStandalone runs a standalone server declaring /1 strong and /2
// weak, in the given mode.
func startWeakStandalone(t *testing.T, mode WeakMode) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.ClientAddr = "127.0.0.1"
	cfg.ClientPort = 0
	cfg.TickTime = 100 * time.Millisecond
	cfg.ForceSync = false
	cfg.WeakMode = mode
	for name, level := range map[string]string{"1": "strong", "2": "weak"} {
		if err := cfg.DeclareNamespace(name, level); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// dial opens a go-zookeeper session to s.
func dial(t *testing.T, s *Server) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{s.Addr().String()}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(10 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatal("no session")
		}
	}
	return c
}

func counter(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

var openACL = zk.WorldACL(zk.PermAll)

// TestWeakWriteDoesNotWaitForFsync: with the log's next fsync stalled, a
// strong write waits for it and a weak write on another connection, ordered
// after it, does not; a read of the weak write on its own connection waits
// until the write is applied, and sees it. With the mode off, and in the
// dynamicfsync mode (the entanglement Performance and Reliability
// Isolation in ZooKeeper shows), the weak write waits too.
func TestWeakWriteDoesNotWaitForFsync(t *testing.T) {
	const stall = 800 * time.Millisecond
	for _, mode := range []WeakMode{WeakShortCircuit, WeakOff, WeakDynamicFsync} {
		t.Run(mode.String(), func(t *testing.T) {
			s := startWeakStandalone(t, mode)
			strong, weak := dial(t, s), dial(t, s)
			s.pipe.(*pipeline).stall.set(stall, 1)
			strongDone := make(chan time.Duration, 1)
			start := time.Now()
			go func() {
				if _, err := strong.Create("/1/s", nil, 0, openACL); err != nil {
					t.Error(err)
				}
				strongDone <- time.Since(start)
			}()
			time.Sleep(20 * time.Millisecond) // the strong write's fsync is under way
			ws := time.Now()
			if _, err := weak.Create("/2/w", []byte("v"), 0, openACL); err != nil {
				t.Fatal(err)
			}
			weakTook := time.Since(ws)
			d, _, err := weak.Get("/2/w")
			readTook := time.Since(ws)
			if err != nil || string(d) != "v" {
				t.Fatalf("read of the weak write: %q %v", d, err)
			}
			strongTook := <-strongDone
			t.Logf("strong %v, weak %v, weak then read %v", strongTook, weakTook, readTook)
			if strongTook < stall {
				t.Fatalf("the strong write took %v, less than the stalled fsync", strongTook)
			}
			switch mode {
			case WeakShortCircuit:
				if weakTook > stall/2 {
					t.Fatalf("the weak write took %v: it waited for the fsync", weakTook)
				}
				if readTook < stall/2 {
					t.Fatalf("the read after the weak write took %v: it did not wait until the write was applied", readTook)
				}
				if n := counter(t, s.metrics.weakEarly); n != 1 {
					t.Fatalf("%v early replies", n)
				}
			default:
				if weakTook < stall/2 {
					t.Fatalf("the weak write took %v with the mode %v", weakTook, mode)
				}
			}
			if n := counter(t, s.metrics.weakMismatch); n != 0 {
				t.Fatalf("%v mismatches", n)
			}
		})
	}
}

// TestWeakRepliesKeepConnectionOrder: on one connection, weak writes sent
// after a strong write that waits for a stalled fsync are ordered and could
// be answered at once, but are answered after it, in request order; a weak
// write sent first is answered at once.
func TestWeakRepliesKeepConnectionOrder(t *testing.T) {
	s := startWeakStandalone(t, WeakShortCircuit)
	r, err := itest.DialRaw(s.Addr().String(), 10000, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const stall = 500 * time.Millisecond
	s.pipe.(*pipeline).stall.set(stall, 1)
	start := time.Now()
	paths := []string{"/2/zero", "/1/first", "/2/second", "/2/third"}
	for i, p := range paths {
		req := &zkproto.CreateRequest{Path: p, ACL: zkproto.OpenACLUnsafe}
		if err := r.WriteFrame(func(e *zkproto.Encoder) {
			(&zkproto.RequestHeader{Xid: zkproto.Xid(i + 1), Op: zkproto.OpCreate}).Encode(e)
			req.Encode(e)
		}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			time.Sleep(20 * time.Millisecond) // the fsync of /2/zero is the one stalled
		}
	}
	var got []string
	for range paths {
		frame, err := r.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		var h zkproto.ReplyHeader
		if err := h.Decode(zkproto.NewDecoder(frame)); err != nil || h.Err != zkproto.OK {
			t.Fatalf("reply %+v, %v", h, err)
		}
		got = append(got, fmt.Sprintf("%d@%v", h.Xid, time.Since(start) >= stall))
	}
	want := []string{"1@false", "2@true", "3@true", "4@true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("answered %v, want %v (xid@after the stall)", got, want)
	}
}

// TestMultiAcrossWeakNamespaceRefused: a multi mixing the weak namespace
// with another is refused whole, before it is ordered; one inside the weak
// namespace, or across strong ones only, is not.
func TestMultiAcrossWeakNamespaceRefused(t *testing.T) {
	for _, mode := range []WeakMode{WeakShortCircuit, WeakOff} {
		t.Run(mode.String(), func(t *testing.T) {
			s := startWeakStandalone(t, mode)
			c := dial(t, s)
			before := s.tree.LastZxid()
			for _, ops := range [][]any{
				{&zk.CreateRequest{Path: "/2/a", Acl: openACL}, &zk.CreateRequest{Path: "/1/a", Acl: openACL}},
				{&zk.CreateRequest{Path: "/1/b", Acl: openACL}, &zk.CreateRequest{Path: "/2/b", Acl: openACL}},
				{&zk.CreateRequest{Path: "/2/c", Acl: openACL}, &zk.CreateRequest{Path: "/top", Acl: openACL}},
				{&zk.CreateRequest{Path: "/2/d", Acl: openACL}, &zk.CheckVersionRequest{Path: "/", Version: -1}},
			} {
				if _, err := c.Multi(ops...); !errors.Is(err, zk.ErrBadArguments) {
					t.Fatalf("multi %v: %v, want BADARGUMENTS", ops, err)
				}
			}
			s.treeMu.RLock()
			after := s.tree.LastZxid()
			s.treeMu.RUnlock()
			if after != before {
				t.Fatalf("refused multis were ordered: zxid 0x%x -> 0x%x", before, after)
			}
			if _, err := c.Multi(&zk.CreateRequest{Path: "/2/x", Acl: openACL}, &zk.CreateRequest{Path: "/2/x/y", Acl: openACL},
				&zk.SetDataRequest{Path: "/2", Data: []byte("root"), Version: -1}); err != nil {
				t.Fatalf("multi inside the weak namespace: %v", err)
			}
			if _, err := c.Multi(&zk.CreateRequest{Path: "/1/x", Acl: openACL}, &zk.CreateRequest{Path: "/other", Acl: openACL}); err != nil {
				t.Fatalf("multi across strong namespaces: %v", err)
			}
			if n := counter(t, s.metrics.weakMismatch); n != 0 {
				t.Fatalf("%v mismatches", n)
			}
		})
	}
}

// declareWeak declares /1 strong and /2 weak.
func declareWeak(c *Config) {
	for name, level := range map[string]string{"1": "strong", "2": "weak"} {
		if err := c.DeclareNamespace(name, level); err != nil {
			panic(err)
		}
	}
}

// TestInProcessEnsembleWeakWrites: clients on every member of a classic-3
// ensemble write to the weak namespace and read their own writes; the
// leader answers them early, every result is the committed one, and every
// replica ends with the same tree.
func TestInProcessEnsembleWeakWrites(t *testing.T) {
	// With fsyncs, as in production: without them a commit often beats
	// the early reply, and answers instead.
	srvs := startInProcessEnsemble(t, 3, true, declareWeak, func(c *Config) { c.ForceSync = true })
	var conns []*zk.Conn
	for _, s := range srvs {
		conns = append(conns, dial(t, s))
	}
	for _, c := range conns {
		if _, err := c.Sync("/2"); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, len(conns))
	for i, c := range conns {
		go func() {
			for k := 0; k < 50; k++ {
				p := fmt.Sprintf("/2/c%d-%02d", i, k)
				got, err := c.Create(p, []byte(p), zk.FlagSequence, openACL)
				if err != nil {
					errs <- fmt.Errorf("create %s: %w", p, err)
					return
				}
				d, _, err := c.Get(got)
				if err != nil || string(d) != p {
					errs <- fmt.Errorf("read of own write %s: %q %v", got, d, err)
					return
				}
				if _, err := c.Set("/2", []byte(got), -1); err != nil {
					errs <- fmt.Errorf("set /2: %w", err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range conns {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	early := 0.0
	for i, s := range srvs {
		early += counter(t, s.metrics.weakEarly)
		if n := counter(t, s.metrics.weakMismatch); n != 0 {
			t.Errorf("server %d: %v mismatches", i+1, n)
		}
	}
	if early < 200 {
		t.Errorf("%v writes answered early, want most of 300", early)
	}
	waitFor(t, "equal digests", func() bool {
		var d []uint64
		var z []int64
		for _, s := range srvs {
			s.treeMu.RLock()
			d, z = append(d, s.tree.Digest()), append(z, s.tree.LastZxid())
			s.treeMu.RUnlock()
		}
		return d[0] == d[1] && d[1] == d[2] && z[0] == z[1] && z[1] == z[2]
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInProcessEnsembleWeakLeaderChange: weak writers on the two
// followers keep writing while the leader stops; the next leader builds
// its speculative state from its committed state and the history it
// adopted and answers early again, every result is the committed one,
// and the two survivors end with the same tree.
func TestInProcessEnsembleWeakLeaderChange(t *testing.T) {
	srvs := startInProcessEnsemble(t, 3, true, declareWeak, func(c *Config) { c.ForceSync = true })
	var leader *Server
	waitFor(t, "a leader", func() bool {
		for _, s := range srvs {
			if s.isLeader() {
				leader = s
				return true
			}
		}
		return false
	})
	var rest []*Server
	for _, s := range srvs {
		if s != leader {
			rest = append(rest, s)
		}
	}
	stop := make(chan struct{})
	done := make(chan int, len(rest))
	for i, s := range rest {
		c := dial(t, s)
		go func() {
			n := 0
			for k := 0; ; k++ {
				select {
				case <-stop:
					done <- n
					return
				default:
				}
				if _, err := c.Create(fmt.Sprintf("/2/c%d-%05d", i, k), nil, 0, openACL); err == nil {
					n++
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	leader.Close()
	var next *Server
	waitFor(t, "a new leader", func() bool {
		for _, s := range rest {
			if s.isLeader() {
				next = s
				return true
			}
		}
		return false
	})
	before := counter(t, next.metrics.weakEarly)
	waitFor(t, "early replies from the new leader", func() bool { return counter(t, next.metrics.weakEarly) > before+20 })
	close(stop)
	acked := <-done + <-done
	for i, s := range rest {
		if n := counter(t, s.metrics.weakMismatch); n != 0 {
			t.Errorf("server %d: %v mismatches", i, n)
		}
	}
	waitFor(t, "equal digests", func() bool {
		var d []uint64
		for _, s := range rest {
			s.treeMu.RLock()
			d = append(d, s.tree.Digest())
			s.treeMu.RUnlock()
		}
		return d[0] == d[1]
	})
	t.Logf("%d weak writes acknowledged across the leader change", acked)
}

// fsyncs returns how many fsyncs of the log s made.
func fsyncs(t *testing.T, s *Server) uint64 {
	t.Helper()
	var m dto.Metric
	if err := s.metrics.batchSize.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestDynamicFsyncSkipsWeakOnlySyncs: in the dynamicfsync mode a
// standalone server does not fsync the log for weak writes alone, and
// does for a strong one, which makes the weak ones before it durable too.
func TestDynamicFsyncSkipsWeakOnlySyncs(t *testing.T) {
	s := startWeakStandalone(t, WeakDynamicFsync)
	c := dial(t, s)
	before := fsyncs(t, s)
	for i := 0; i < 20; i++ {
		if _, err := c.Create(fmt.Sprintf("/2/w%d", i), nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	if n := fsyncs(t, s); n != before {
		t.Fatalf("%d fsyncs for weak writes alone", n-before)
	}
	if _, err := c.Create("/1/s", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	if n := fsyncs(t, s); n != before+1 {
		t.Fatalf("%d fsyncs for a strong write", n-before)
	}
}

// TestInProcessEnsembleDynamicFsync: in the dynamicfsync mode an
// ensemble answers weak writes before they are applied, once every entry
// before them committed, with the committed results, and its replicas end
// equal.
func TestInProcessEnsembleDynamicFsync(t *testing.T) {
	srvs := startInProcessEnsemble(t, 3, true, declareWeak, func(c *Config) {
		c.ForceSync, c.WeakMode = true, WeakDynamicFsync
	})
	errs := make(chan error, len(srvs))
	for i, s := range srvs {
		c := dial(t, s)
		go func() {
			for k := 0; k < 50; k++ {
				p := fmt.Sprintf("/%d/c%d-%02d", 1+k%2, i, k)
				if _, err := c.Create(p, nil, 0, openACL); err != nil {
					errs <- fmt.Errorf("create %s: %w", p, err)
					return
				}
				if _, _, err := c.Get(p); err != nil {
					errs <- fmt.Errorf("read of own write %s: %w", p, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range srvs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	early := 0.0
	for i, s := range srvs {
		early += counter(t, s.metrics.weakEarly)
		if n := counter(t, s.metrics.weakMismatch); n != 0 {
			t.Errorf("server %d: %v mismatches", i+1, n)
		}
	}
	if early == 0 {
		t.Error("no weak write answered before it was applied")
	}
	waitFor(t, "equal digests", func() bool {
		var d []uint64
		for _, s := range srvs {
			s.treeMu.RLock()
			d = append(d, s.tree.Digest())
			s.treeMu.RUnlock()
		}
		return d[0] == d[1] && d[1] == d[2]
	})
}
