package peer

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// trio starts three transports on loopback ports that know each other.
func trio(t *testing.T) []*Transport {
	t.Helper()
	var lns []net.Listener
	peers := map[gpaxos.ID]string{}
	for i := 1; i <= 3; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peers[gpaxos.ID(i)] = ln.Addr().String()
		lns = append(lns, ln)
	}
	for _, ln := range lns {
		ln.Close()
	}
	var out []*Transport
	for i := 1; i <= 3; i++ {
		others := map[gpaxos.ID]string{}
		for id, a := range peers {
			if id != gpaxos.ID(i) {
				others[id] = a
			}
		}
		tr, err := Listen(Config{ID: gpaxos.ID(i), Listen: peers[gpaxos.ID(i)], Peers: others, Cluster: "test", Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		out = append(out, tr)
	}
	return out
}

func recvN(t *testing.T, tr *Transport, n int, within time.Duration) []gpaxos.Message {
	t.Helper()
	var got []gpaxos.Message
	deadline := time.After(within)
	for len(got) < n {
		select {
		case m := <-tr.Recv():
			got = append(got, m)
		case <-deadline:
			t.Fatalf("received %d of %d messages", len(got), n)
		}
	}
	return got
}

func TestSendReceiveInOrder(t *testing.T) {
	ts := trio(t)
	const n = 5000
	for i := 0; i < n; i++ {
		ts[0].Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2, Commit: gpaxos.Zxid(i),
			Entries: []gpaxos.Entry{{Zxid: gpaxos.Zxid(i), Data: []byte(fmt.Sprint(i))}}})
		ts[0].Send(gpaxos.Message{Type: gpaxos.MsgGAck, From: 1, To: 3, Zxid: gpaxos.Zxid(i)})
	}
	for to, tr := range []*Transport{ts[1], ts[2]} {
		got := recvN(t, tr, n, 10*time.Second)
		for i, m := range got {
			if to == 0 && (m.Commit != gpaxos.Zxid(i) || string(m.Entries[0].Data) != fmt.Sprint(i)) ||
				to == 1 && m.Zxid != gpaxos.Zxid(i) {
				t.Fatalf("message %d out of order: %+v", i, m)
			}
		}
	}
	if st := ts[0].Stats(); st.Sent != 2*n || st.Reconnects != 2 {
		t.Fatalf("stats %+v: want %d sent over 2 connections", st, 2*n)
	}
}

func TestReconnectAfterPeerRestart(t *testing.T) {
	ts := trio(t)
	ts[0].Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2})
	recvN(t, ts[1], 1, 5*time.Second)
	addr := ts[1].Addr().String()
	ts[1].Close()
	// While server 2 is down, sends are dropped, not queued forever, and
	// do not block.
	for i := 0; i < 100; i++ {
		ts[0].Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2})
	}
	again, err := Listen(Config{ID: 2, Listen: addr, Peers: map[gpaxos.ID]string{1: ts[0].Addr().String()}, Cluster: "test", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ts[0].Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2, Zxid: 7})
		select {
		case m := <-again.Recv():
			if m.From == 1 {
				return
			}
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no message after the peer came back")
		}
	}
}

func TestStrangersAndGarbageAreRefused(t *testing.T) {
	ts := trio(t)
	// Another cluster's server with a known id.
	other, err := Listen(Config{ID: 1, Listen: "127.0.0.1:0", Peers: map[gpaxos.ID]string{2: ts[1].Addr().String()}, Cluster: "other", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2})
	// Garbage and an oversized frame from raw connections.
	for _, payload := range [][]byte{[]byte("GET / HTTP/1.0\r\n\r\n"), append([]byte(helloMagic), make([]byte, 10)...)} {
		c, err := net.Dial("tcp", ts[1].Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(payload)
		c.Write([]byte{0xff, 0xff, 0xff, 0xff})
		c.Close()
	}
	select {
	case m := <-ts[1].Recv():
		t.Fatalf("a stranger's message got through: %+v", m)
	case <-time.After(300 * time.Millisecond):
	}
	// The members still talk.
	ts[0].Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2})
	recvN(t, ts[1], 1, 5*time.Second)
}

func TestFaults(t *testing.T) {
	ts := trio(t)
	f := ts[0].Faults()
	if err := f.Apply("block 2; delay 3 200ms"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ts[0].Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2})
	ts[0].Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 3})
	recvN(t, ts[2], 1, 5*time.Second)
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("delayed message arrived after %v", d)
	}
	select {
	case <-ts[1].Recv():
		t.Fatal("blocked message arrived")
	case <-time.After(200 * time.Millisecond):
	}
	if err := f.Apply("heal; drop 2 1"); err != nil {
		t.Fatal(err)
	}
	ts[0].Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2})
	select {
	case <-ts[1].Recv():
		t.Fatal("message dropped with probability 1 arrived")
	case <-time.After(200 * time.Millisecond):
	}
	// Isolation cuts both directions.
	f.Apply("heal; isolate")
	ts[1].Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 2, To: 1})
	select {
	case <-ts[0].Recv():
		t.Fatal("an isolated server received a message")
	case <-time.After(200 * time.Millisecond):
	}
	f.Apply("heal")
	ts[0].Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2})
	recvN(t, ts[1], 1, 5*time.Second)
	if err := f.Apply("drop 2 7"); err == nil {
		t.Fatal("bad probability accepted")
	}
	if err := f.Apply("frobnicate"); err == nil {
		t.Fatal("unknown fault accepted")
	}
}

func TestQueueBoundDropsInsteadOfBlocking(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// A peer that accepts but never reads: the queue fills up.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tr, err := Listen(Config{ID: 1, Listen: "127.0.0.1:0", Peers: map[gpaxos.ID]string{2: ln.Addr().String()},
		Cluster: "test", QueueMessages: 100, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	big := make([]byte, 64<<10)
	start := time.Now()
	for i := 0; i < 2000; i++ {
		tr.Send(gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2, Entries: []gpaxos.Entry{{Data: big}}})
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Send blocked for %v", d)
	}
	if st := tr.Stats(); st.DroppedFull == 0 {
		t.Fatalf("no message dropped on a full queue: %+v", st)
	}
}
