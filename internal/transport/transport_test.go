package transport

import (
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

func TestRoundTripThreeServers(t *testing.T) {
	trs := newCluster(t, 3, nil)
	for _, from := range trs {
		for _, to := range trs {
			m := gpaxos.Message{Type: gpaxos.MsgSync, From: from.ID(), To: to.ID(), Epoch: 7,
				Entries:  []gpaxos.Entry{{Zxid: gpaxos.MakeZxid(7, 1), Data: []byte("payload")}},
				Snapshot: &gpaxos.Snapshot{Index: 3, Voters: quorum.Config{Groups: [][]quorum.ID{{1, 2, 3}}}, Data: []byte("snap")}}
			if !from.Send(m) {
				t.Fatalf("Send %d→%d refused", from.ID(), to.ID())
			}
		}
	}
	for _, tr := range trs {
		got := recvN(t, tr, 3, 5*time.Second)
		seen := map[gpaxos.ID]bool{}
		for _, m := range got {
			if m.To != tr.ID() || m.Epoch != 7 || string(m.Entries[0].Data) != "payload" ||
				!reflect.DeepEqual(m.Snapshot.Voters.Groups, [][]quorum.ID{{1, 2, 3}}) {
				t.Fatalf("server %d got %+v", tr.ID(), m)
			}
			seen[m.From] = true
		}
		if len(seen) != 3 {
			t.Fatalf("server %d heard from %v, want 1, 2, 3 (itself included)", tr.ID(), seen)
		}
	}
	if s, ok := waitStats(trs[0], func(s Stats) bool {
		return s.Sent == 2 && s.Delivered == 3 && s.Received == 2 && s.Dropped.Total() == 0
	}); !ok {
		t.Fatalf("stats of server 1: %+v", s)
	}
}

func TestOrderPerLink(t *testing.T) {
	const n = 5000
	trs := newCluster(t, 3, func(c *Config) { c.QueueLen = 2 * n })
	for i := range uint64(n) {
		trs[0].Send(msg(1, 3, i))
		trs[1].Send(msg(2, 3, i))
	}
	next := map[gpaxos.ID]uint64{1: 0, 2: 0}
	for _, m := range recvN(t, trs[2], 2*n, 10*time.Second) {
		if uint64(m.Commit) != next[m.From] {
			t.Fatalf("from %d: got %d, want %d", m.From, m.Commit, next[m.From])
		}
		next[m.From]++
	}
}

func TestBatching(t *testing.T) {
	const n = 500
	trs := newCluster(t, 2, nil)
	waitConnected(t, trs[0], 2)
	before := trs[0].Stats().Flushes
	// While paused, the writer holds everything, so the resume finds the
	// whole queue ready for one write.
	trs[0].Faults().Pause()
	for i := range uint64(n) {
		if !trs[0].Send(msg(1, 2, i)) {
			t.Fatalf("Send %d refused", i)
		}
	}
	trs[0].Faults().Resume()
	recvN(t, trs[1], n, 5*time.Second)
	// The writer counts a batch once its flush returns, which can be just
	// after the receiver has the messages.
	deadline := time.Now().Add(5 * time.Second)
	s := trs[0].Stats()
	for s.Sent != n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		s = trs[0].Stats()
	}
	if flushes := s.Flushes - before; flushes > 2 {
		t.Fatalf("%d messages took %d flushes, want at most 2", n, flushes)
	}
	if s.Sent != n {
		t.Fatalf("Sent = %d, want %d", s.Sent, n)
	}
}

func TestReconnectAfterPeerRestart(t *testing.T) {
	trs := newCluster(t, 2, nil)
	a, b := trs[0], trs[1]
	a.Send(msg(1, 2, 1))
	recvN(t, b, 1, 5*time.Second)
	addr := b.Addr().String()
	b.Close()
	waitFor(t, 5*time.Second, "the writer to notice the peer is gone", func() bool { return !a.Stats().Peers[2].Connected })

	b2 := newTransport(t, 2, func(c *Config) {
		c.ListenAddr = addr
		c.Peers = map[gpaxos.ID]string{1: a.Addr().String()}
	})
	// Messages sent while the peer restarts may be lost; keep sending until
	// one arrives, then check that the link is healthy again.
	deadline := time.Now().Add(5 * time.Second)
	for got := false; !got; {
		if time.Now().After(deadline) {
			t.Fatal("no message reached the restarted peer")
		}
		a.Send(msg(1, 2, 2))
		select {
		case <-b2.Recv():
			got = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	for i := range uint64(100) {
		a.Send(msg(1, 2, 100+i))
	}
	got := recvN(t, b2, 100, 5*time.Second)
	for got[0].Commit == 2 { // late copies of the probe
		got = append(got[1:], recvN(t, b2, 1, 5*time.Second)...)
	}
	for i, m := range got {
		if m.Commit != gpaxos.Zxid(100+i) {
			t.Fatalf("message %d after reconnect has commit %d", i, m.Commit)
		}
	}
	if s := a.Stats(); s.Reconnects < 1 || s.Peers[2].Connects < 2 {
		t.Fatalf("reconnect not counted: %+v", s)
	}
}

func TestHandshakeRejections(t *testing.T) {
	tests := []struct {
		name   string
		dialer func(c *Config)          // config of server 1, the dialer
		book   func(b string) gpaxos.ID // which ID server 1 files server 2's address under
		target func(c *Config)          // config of server 2
		accept bool
	}{
		{name: "other cluster", dialer: func(c *Config) { c.Cluster = "other" }},
		{name: "unexpected ID", book: func(string) gpaxos.ID { return 5 }},
		{name: "sender not in book", target: func(c *Config) { c.Peers = nil }},
		{name: "unknown sender accepted when allowed", target: func(c *Config) { c.Peers = nil; c.AcceptUnknownPeers = true }, accept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTransport(t, 2, func(c *Config) {
				c.Peers = map[gpaxos.ID]string{1: "127.0.0.1:1"}
				if tt.target != nil {
					tt.target(c)
				}
			})
			id := gpaxos.ID(2)
			if tt.book != nil {
				id = tt.book(b.Addr().String())
			}
			a := newTransport(t, 1, func(c *Config) {
				c.Peers = map[gpaxos.ID]string{id: b.Addr().String()}
				if tt.dialer != nil {
					tt.dialer(c)
				}
			})
			a.Send(msg(1, id, 1))
			if tt.accept {
				recvN(t, b, 1, 5*time.Second)
				return
			}
			waitFor(t, 5*time.Second, "a rejected handshake", func() bool {
				return b.Stats().Rejected > 0 && a.Stats().DialFailures > 0
			})
			expectNothing(t, b, 100*time.Millisecond)
			if a.Stats().Peers[id].Connected {
				t.Fatal("the dialer believes it is connected")
			}
		})
	}
}

// TestUnknownPeerLearned: an acceptor that takes unknown peers files the
// address a dialer's hello names, so that its replies reach the dialer.
func TestUnknownPeerLearned(t *testing.T) {
	b := newTransport(t, 2, func(c *Config) { c.Peers = nil; c.AcceptUnknownPeers = true })
	a := newTransport(t, 1, func(c *Config) { c.Peers = map[gpaxos.ID]string{2: b.Addr().String()} })
	a.Send(msg(1, 2, 1))
	recvN(t, b, 1, 5*time.Second)
	if got := b.Peers()[1]; got != a.Addr().String() {
		t.Fatalf("acceptor's book has %q for the dialer, want %q", got, a.Addr().String())
	}
	b.Send(msg(2, 1, 2))
	recvN(t, a, 1, 5*time.Second)
}

// TestUnknownPeersBounded: handshakes from ever new IDs do not grow the
// address book past MaxPeers; a peer already learned is still heard.
func TestUnknownPeersBounded(t *testing.T) {
	b := newTransport(t, 2, func(c *Config) {
		c.Peers = map[gpaxos.ID]string{9: "127.0.0.1:1"}
		c.AcceptUnknownPeers, c.MaxPeers = true, 2
	})
	a := newTransport(t, 1, func(c *Config) { c.Peers = map[gpaxos.ID]string{2: b.Addr().String()} })
	a.Send(msg(1, 2, 1))
	recvN(t, b, 1, 5*time.Second)
	c := newTransport(t, 3, func(c *Config) { c.Peers = map[gpaxos.ID]string{2: b.Addr().String()} })
	c.Send(msg(3, 2, 1))
	waitFor(t, 5*time.Second, "the third server refused", func() bool { return b.Stats().Rejected > 0 })
	expectNothing(t, b, 100*time.Millisecond)
	if _, ok := b.Peers()[3]; ok || len(b.Peers()) != 2 {
		t.Fatalf("address book %v, want servers 9 and 1 only", b.Peers())
	}
	a.Send(msg(1, 2, 2))
	recvN(t, b, 1, 5*time.Second)
}

func TestQueueFullDropsCounted(t *testing.T) {
	// Nothing listens at the peer's address, so nothing leaves the queue.
	a := newTransport(t, 1, func(c *Config) {
		c.Peers = map[gpaxos.ID]string{2: "127.0.0.1:1"}
		c.QueueLen = 10
		c.QueueBytes = 1000
	})
	for i := range uint64(25) {
		a.Send(msg(1, 2, i))
	}
	s := a.Stats()
	if s.Dropped.QueueFull != 15 || s.Peers[2].Queued != 10 || s.Peers[2].Dropped != 15 {
		t.Fatalf("count bound: %+v", s)
	}

	b := newTransport(t, 1, func(c *Config) {
		c.Peers = map[gpaxos.ID]string{2: "127.0.0.1:1"}
		c.QueueBytes = 1000
	})
	big := gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2, Entries: []gpaxos.Entry{{Data: make([]byte, 400)}}}
	huge := gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2, Entries: []gpaxos.Entry{{Data: make([]byte, 5000)}}}
	// An empty queue takes one message beyond the budget, then nothing.
	if !b.Send(huge) {
		t.Fatal("an empty queue refused an oversize message")
	}
	if b.Send(big) {
		t.Fatal("a queue over its byte budget took another message")
	}
	if s := b.Stats(); s.Dropped.QueueBytes != 1 || s.Peers[2].Queued != 1 {
		t.Fatalf("byte bound: %+v", s)
	}
}

func TestDeadPeerDoesNotSlowOthers(t *testing.T) {
	trs := newCluster(t, 2, func(c *Config) { c.QueueLen = 4000 })
	a := trs[0]
	book := a.Peers()
	book[9] = "127.0.0.1:1" // refuses connections
	if err := a.SetPeers(book); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range uint64(2000) {
		a.Send(msg(1, 9, i))
		a.Send(msg(1, 2, i))
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("4000 Sends took %v", d)
	}
	recvN(t, trs[1], 2000, 10*time.Second)
}

func TestSendOversizeDropped(t *testing.T) {
	trs := newCluster(t, 2, func(c *Config) { c.MaxFrameSize = minFrameSize })
	if trs[0].Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2, Entries: []gpaxos.Entry{{Data: make([]byte, minFrameSize)}}}) {
		t.Fatal("oversize message queued")
	}
	if s := trs[0].Stats(); s.Dropped.TooLarge != 1 {
		t.Fatalf("TooLarge = %d", s.Dropped.TooLarge)
	}
	trs[0].Send(msg(1, 2, 1))
	recvN(t, trs[1], 1, 5*time.Second)
}

func TestSendUnknownAndSelf(t *testing.T) {
	a := newTransport(t, 1, nil)
	if a.Send(msg(1, 4, 0)) {
		t.Fatal("message to an unknown peer queued")
	}
	if !a.Send(msg(1, 1, 7)) {
		t.Fatal("message to self refused")
	}
	if m := recvN(t, a, 1, time.Second)[0]; m.Commit != 7 {
		t.Fatalf("got %+v", m)
	}
	if a.Send(gpaxos.Message{From: 1, To: 1}) {
		t.Fatal("message of type zero queued")
	}
	if s, ok := waitStats(a, func(s Stats) bool {
		return s.Dropped.UnknownPeer == 1 && s.Dropped.Invalid == 1 && s.Delivered == 1
	}); !ok {
		t.Fatalf("%+v", s)
	}
}

func TestSetPeers(t *testing.T) {
	trs := newCluster(t, 3, nil)
	a := trs[0]
	// Remove 3: its writer stops and its incoming connection is closed.
	waitConnected(t, trs[2], 1)
	if err := a.SetPeers(map[gpaxos.ID]string{2: trs[1].Addr().String()}); err != nil {
		t.Fatal(err)
	}
	if a.Send(msg(1, 3, 1)) {
		t.Fatal("message to a removed peer queued")
	}
	waitFor(t, 5*time.Second, "3 to lose its connection to 1", func() bool { return !trs[2].Stats().Peers[1].Connected })
	// 3 can no longer get in: 1 does not know it.
	waitFor(t, 5*time.Second, "1 to refuse 3", func() bool { return a.Stats().Rejected > 0 })

	// Move 2 to a new process on another port: 1 follows the new address.
	b2 := newTransport(t, 2, func(c *Config) { c.Peers = map[gpaxos.ID]string{1: a.Addr().String()} })
	if err := a.SetPeers(map[gpaxos.ID]string{2: b2.Addr().String()}); err != nil {
		t.Fatal(err)
	}
	// The transport drops what it was writing when a connection ends, and
	// SetPeers ends the one to the old address: a message sent just then
	// may be lost (the protocol retransmits), so send until one arrives.
	deadline := time.After(5 * time.Second)
	resend := time.NewTicker(100 * time.Millisecond)
	defer resend.Stop()
	for arrived := false; !arrived; {
		a.Send(msg(1, 2, 5))
		select {
		case ms := <-b2.Recv():
			for _, m := range ms {
				if m.Commit != 5 {
					t.Fatalf("got %+v", m)
				}
			}
			arrived = true
		case <-resend.C:
		case <-deadline:
			t.Fatal("server 2's new process received nothing in 5s")
		}
	}
	if err := a.SetPeers(map[gpaxos.ID]string{0: "x"}); err == nil {
		t.Fatal("peer ID zero accepted")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{
		{ListenAddr: "127.0.0.1:0", Cluster: "c"},
		{ID: 1, Cluster: "c"},
		{ID: 1, ListenAddr: "127.0.0.1:0"},
		{ID: 1, ListenAddr: "127.0.0.1:0", Cluster: "c", MaxFrameSize: 10},
		{ID: 1, ListenAddr: "127.0.0.1:0", Cluster: "c", Peers: map[gpaxos.ID]string{2: ""}},
		{ID: 1, ListenAddr: "127.0.0.1:0", Cluster: "c", BackoffMin: time.Second, BackoffMax: time.Millisecond},
	} {
		if tr, err := New(c); err == nil {
			tr.Close()
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

func TestCloseLeaksNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	trs := make([]*Transport, 3)
	book := map[gpaxos.ID]string{4: "127.0.0.1:1"} // a peer that is never up
	for i := range trs {
		tr, err := New(Config{ID: gpaxos.ID(i + 1), ListenAddr: "127.0.0.1:0", Cluster: testCluster, Logger: quietLogger(),
			FaultInjection: true})
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
		book[tr.ID()] = tr.Addr().String()
	}
	for _, tr := range trs {
		tr.SetPeers(book)
	}
	trs[0].Faults().SetDelay(2, Out, 50*time.Millisecond, 0)
	trs[1].Faults().SetDelay(AllPeers, In, time.Hour, 0) // messages stuck in the inbox
	for i := range uint64(100) {
		for _, tr := range trs {
			for id := range book {
				tr.Send(msg(tr.ID(), id, i))
			}
		}
	}
	recvN(t, trs[2], 10, 5*time.Second)
	trs[0].Faults().Pause() // a paused writer and dispatcher must also stop
	for _, tr := range trs {
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		if err := tr.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	for _, tr := range trs {
		for range tr.Recv() { // drains what was buffered, then ends: Recv is closed
		}
		if tr.Send(msg(tr.ID(), 2, 0)) {
			t.Fatal("Send after Close queued")
		}
	}
	waitFor(t, 5*time.Second, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}
