package client

import (
	"errors"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestReconnectKeepsSessionAndWatches cuts the TCP connection (as a server
// closing it would) and checks that the session, its ephemeral node and
// its watches survive, including a change made while the client was
// disconnected, which setWatches must report at once.
func TestReconnectKeepsSessionAndWatches(t *testing.T) {
	ts := startServer(t)
	px := newProxy(t, ts.addr)
	c := connect(t, []string{px.addr()})
	w := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	sid := c.SessionID()
	mustCreate(t, c, "/eph", "", Ephemeral)
	mustCreate(t, c, "/changed", "", Persistent)
	mustCreate(t, c, "/later", "", Persistent)
	_, _, changed, _ := c.GetW(ctx, "/changed")
	_, _, later, _ := c.GetW(ctx, "/later")
	_, created, _ := c.ExistsW(ctx, "/new")
	_, _, kids, _ := c.ChildrenW(ctx, "/later")
	rec, err := c.AddWatch(ctx, "/tree", true)
	if err != nil {
		t.Fatal(err)
	}

	px.setRefuse(true)
	px.sever()
	waitState(t, c, StateDisconnected)
	// Changes while disconnected.
	if _, err := w.Set(ctx, "/changed", []byte("1"), AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Create(ctx, "/new", nil, Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Create(ctx, "/tree", nil, Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	px.setRefuse(false)
	waitState(t, c, StateConnected)
	if c.SessionID() != sid {
		t.Fatalf("session changed: %x -> %x", sid, c.SessionID())
	}
	if ev := waitEvent(t, changed, "change while disconnected"); ev.Type != zkproto.EventNodeDataChanged {
		t.Fatalf("event %+v", ev)
	}
	if ev := waitEvent(t, created, "creation while disconnected"); ev.Type != zkproto.EventNodeCreated {
		t.Fatalf("event %+v", ev)
	}
	// The persistent watch is restored, but setWatches does not replay
	// what happened to its subtree while disconnected (as in ZooKeeper).
	noEvent(t, later, "untouched node")
	if st, err := w.Exists(ctx, "/eph"); err != nil || st == nil || st.EphemeralOwner != sid {
		t.Fatalf("ephemeral after reconnection: %+v %v", st, err)
	}
	// Watches restored unfired still fire.
	if _, _, err := w.Create(ctx, "/later/k", nil, Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, kids, "child watch after reconnection"); ev.Type != zkproto.EventNodeChildrenChanged {
		t.Fatalf("event %+v", ev)
	}
	if _, err := w.Set(ctx, "/later", []byte("x"), AnyVersion); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, later, "data watch after reconnection"); ev.Type != zkproto.EventNodeDataChanged {
		t.Fatalf("event %+v", ev)
	}
	if _, err := w.Set(ctx, "/tree", []byte("x"), AnyVersion); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, rec.Events(), "persistent watch after reconnection"); ev.Type != zkproto.EventNodeDataChanged || ev.Path != "/tree" {
		t.Fatalf("event %+v", ev)
	}
}

// TestPendingFailWithConnectionLoss: requests in flight when the
// connection breaks fail with CONNECTIONLOSS, in order, and are not
// retried; the session carries on.
func TestPendingFailWithConnectionLoss(t *testing.T) {
	ts := startServer(t)
	px := newProxy(t, ts.addr)
	c := connect(t, []string{px.addr()})
	ctx := ctxT(t)
	resume := px.pause()
	var calls []*Call[CreateResult]
	for i := range 20 {
		calls = append(calls, c.CreateAsync("/lost", []byte{byte(i)}, PersistentSequential, zkproto.OpenACLUnsafe))
	}
	time.Sleep(50 * time.Millisecond) // let them reach the server
	px.sever()
	resume()
	for i, cl := range calls {
		if err := cl.Err(); err != zkproto.ErrConnectionLoss {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	waitState(t, c, StateConnected)
	// They did reach the server: connection loss means "unknown", not
	// "not done".
	kids, _, err := c.Children(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range kids {
		if len(k) > 4 && k[:4] == "lost" {
			n++
		}
	}
	if n != 20 {
		t.Fatalf("%d of 20 sequential nodes exist", n)
	}
}

// TestFailoverToSecondServer: when the first server of the list goes
// away, the client moves to the next one with the same session.
func TestFailoverToSecondServer(t *testing.T) {
	ts := startServer(t)
	a, b := newProxy(t, ts.addr), newProxy(t, ts.addr)
	c := connect(t, []string{a.addr(), b.addr()})
	ctx := ctxT(t)
	if c.Server() != a.addr() {
		t.Fatalf("connected to %s, want the first server %s", c.Server(), a.addr())
	}
	sid := c.SessionID()
	mustCreate(t, c, "/fo", "", Persistent)
	_, _, watch, _ := c.GetW(ctx, "/fo")
	a.setRefuse(true)
	a.sever()
	waitState(t, c, StateDisconnected)
	ev := waitState(t, c, StateConnected)
	if ev.Server != b.addr() || c.Server() != b.addr() || c.SessionID() != sid || ev.SessionID != sid {
		t.Fatalf("after failover: event %+v, server %s, session %x", ev, c.Server(), c.SessionID())
	}
	if _, err := c.Set(ctx, "/fo", []byte("z"), AnyVersion); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, watch, "watch after failover"); ev.Type != zkproto.EventNodeDataChanged {
		t.Fatalf("event %+v", ev)
	}
}

// TestServerRestart restarts the server on the same data directory and
// port: the session is recovered from the log, and the client's watches,
// which the new server process never had, are restored by setWatches.
func TestServerRestart(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	sid := c.SessionID()
	mustCreate(t, c, "/rs", "", Persistent)
	mustCreate(t, c, "/rs-eph", "", Ephemeral)
	_, _, watch, _ := c.GetW(ctx, "/rs")
	pw, err := c.AddWatch(ctx, "/rs", false)
	if err != nil {
		t.Fatal(err)
	}
	ts.restart()
	waitState(t, c, StateDisconnected)
	waitState(t, c, StateConnected)
	if c.SessionID() != sid {
		t.Fatalf("new session after restart")
	}
	if st, err := c.Exists(ctx, "/rs-eph"); err != nil || st == nil {
		t.Fatalf("ephemeral lost across restart: %v %v", st, err)
	}
	w := connect(t, []string{ts.addr})
	if _, err := w.Set(ctx, "/rs", []byte("after"), AnyVersion); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, watch, "one-shot watch after restart"); ev.Type != zkproto.EventNodeDataChanged {
		t.Fatalf("event %+v", ev)
	}
	if ev := waitEvent(t, pw.Events(), "persistent watch after restart"); ev.Type != zkproto.EventNodeDataChanged {
		t.Fatalf("event %+v", ev)
	}
}

// TestSessionExpiry keeps the client away longer than its session
// timeout: on return the server reports the session expired, which is
// final.
func TestSessionExpiry(t *testing.T) {
	ts := startServer(t)
	px := newProxy(t, ts.addr)
	c := connect(t, []string{px.addr()}, WithSessionTimeout(400*time.Millisecond))
	ctx := ctxT(t)
	if to := c.SessionTimeout(); to != 400*time.Millisecond {
		t.Fatalf("negotiated timeout %v", to)
	}
	mustCreate(t, c, "/exp", "", Ephemeral)
	_, _, watch, _ := c.GetW(ctx, "/exp")
	pw, err := c.AddWatch(ctx, "/", true)
	if err != nil {
		t.Fatal(err)
	}
	px.setRefuse(true)
	px.sever()
	waitState(t, c, StateDisconnected)
	// Queued while disconnected: fails with the expiry.
	queued := c.GetAsync("/")
	w := connect(t, []string{ts.addr})
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := w.Exists(ctx, "/exp")
		if err != nil {
			t.Fatal(err)
		}
		if st == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not expire the session")
		}
		time.Sleep(50 * time.Millisecond)
	}
	px.setRefuse(false)
	waitState(t, c, StateExpired)
	if _, err := queued.Result(); err != zkproto.ErrSessionExpired {
		t.Fatalf("queued call: %v", err)
	}
	// The node's deletion happened while the client was away, so the
	// watch ends with the expiry instead.
	ev := waitEvent(t, watch, "watch at expiry")
	if ev.Type != zkproto.EventNone || ev.State != StateExpired || !errors.Is(ev.Err, zkproto.ErrSessionExpired) {
		t.Fatalf("watch event %+v", ev)
	}
	ev = waitEvent(t, pw.Events(), "persistent watch at expiry")
	if ev.State != StateExpired || ev.Err == nil {
		t.Fatalf("persistent watch event %+v", ev)
	}
	if _, ok := <-pw.Events(); ok {
		t.Fatal("persistent watch open after expiry")
	}
	if _, _, err := c.Get(ctx, "/"); err != zkproto.ErrSessionExpired {
		t.Fatalf("call after expiry: %v", err)
	}
	if s := c.State(); s != StateExpired {
		t.Fatalf("state %v", s)
	}
	if _, ok := <-c.SessionEvents(); ok {
		t.Fatal("session events open after the final state")
	}
}

// TestPingsKeepSessionAlive: an idle session outlives its timeout many
// times over because the client pings.
func TestPingsKeepSessionAlive(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr}, WithSessionTimeout(500*time.Millisecond))
	ctx := ctxT(t)
	sid := c.SessionID()
	mustCreate(t, c, "/alive", "", Ephemeral)
	time.Sleep(2 * time.Second)
	if st, err := c.Exists(ctx, "/alive"); err != nil || st == nil || c.SessionID() != sid {
		t.Fatalf("session lost while idle: %v %v", st, err)
	}
}

// TestCloseEndsSession: Close sends closeSession, so ephemeral nodes go
// at once; later calls fail with ErrClosed; no goroutine is left.
func TestCloseEndsSession(t *testing.T) {
	ts := startServer(t)
	w := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	c, err := Connect(ctx, []string{ts.addr}, WithSessionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, "/bye", "", Ephemeral)
	mustCreate(t, c, "/bye-p", "", Persistent)
	_, _, watch, _ := c.GetW(ctx, "/bye-p")
	pw, err := c.AddWatch(ctx, "/bye-p", false)
	if err != nil {
		t.Fatal(err)
	}
	inflight := c.GetAsync("/bye-p")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, err := inflight.Result(); err != nil {
		t.Fatalf("call queued before Close: %v", err)
	}
	if st, err := w.Exists(ctx, "/bye"); err != nil || st != nil {
		t.Fatalf("ephemeral survived Close: %v %v", st, err)
	}
	if ev := waitEvent(t, watch, "watch at close"); ev.State != StateClosed || ev.Err != ErrClosed {
		t.Fatalf("event %+v", ev)
	}
	for range pw.Events() { // closed at once by Close
	}
	if _, _, err := c.Get(ctx, "/"); err != ErrClosed {
		t.Fatalf("call after Close: %v", err)
	}
	if c.State() != StateClosed {
		t.Fatalf("state %v", c.State())
	}
	w.Close()
	waitNoClientGoroutines(t)
}

// TestCloseWhileDisconnected: Close does not wait for a server.
func TestCloseWhileDisconnected(t *testing.T) {
	ts := startServer(t)
	px := newProxy(t, ts.addr)
	c, err := Connect(ctxT(t), []string{px.addr()}, WithSessionTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	px.setRefuse(true)
	px.sever()
	waitState(t, c, StateDisconnected)
	queued := c.GetAsync("/")
	start := time.Now()
	c.Close()
	if time.Since(start) > time.Second {
		t.Fatalf("Close took %v", time.Since(start))
	}
	if err := queued.Err(); err != ErrClosed {
		t.Fatalf("queued call: %v", err)
	}
	waitNoClientGoroutines(t)
}
