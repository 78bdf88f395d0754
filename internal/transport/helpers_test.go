package transport

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

const testCluster = "test-cluster"

// syncBuffer is a log sink that tests read while transports write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newTransport starts a transport on a free port of 127.0.0.1.
func newTransport(t *testing.T, id gpaxos.ID, tweak func(*Config)) *Transport {
	t.Helper()
	cfg := Config{ID: id, ListenAddr: "127.0.0.1:0", Cluster: testCluster, Logger: quietLogger(),
		FaultInjection: true, FaultSeed: uint64(id)}
	if tweak != nil {
		tweak(&cfg)
	}
	tr, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%d): %v", id, err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// newCluster starts transports 1..n that all know each other.
func newCluster(t *testing.T, n int, tweak func(*Config)) []*Transport {
	t.Helper()
	trs := make([]*Transport, n)
	book := map[gpaxos.ID]string{}
	for i := range trs {
		trs[i] = newTransport(t, gpaxos.ID(i+1), tweak)
		book[gpaxos.ID(i+1)] = trs[i].Addr().String()
	}
	for _, tr := range trs {
		if err := tr.SetPeers(book); err != nil {
			t.Fatal(err)
		}
	}
	return trs
}

// recvN receives n messages or fails the test after timeout.
func recvN(t *testing.T, tr *Transport, n int, timeout time.Duration) []gpaxos.Message {
	t.Helper()
	var out []gpaxos.Message
	deadline := time.After(timeout)
	for len(out) < n {
		select {
		case ms := <-tr.Recv():
			out = append(out, ms...)
		case <-deadline:
			t.Fatalf("server %d received %d of %d messages in %v", tr.ID(), len(out), n, timeout)
		}
	}
	return out
}

// expectNothing fails if tr delivers a message within d.
func expectNothing(t *testing.T, tr *Transport, d time.Duration) {
	t.Helper()
	select {
	case ms := <-tr.Recv():
		t.Fatalf("server %d received unexpected %+v", tr.ID(), ms)
	case <-time.After(d):
	}
}

// waitFor polls cond until it holds or fails the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitConnected waits until from's outgoing connection to to is up.
func waitConnected(t *testing.T, from *Transport, to gpaxos.ID) {
	t.Helper()
	waitFor(t, 5*time.Second, fmt.Sprintf("connection %d→%d", from.ID(), to), func() bool {
		return from.Stats().Peers[to].Connected
	})
}

func msg(from, to gpaxos.ID, commit uint64) gpaxos.Message {
	return gpaxos.Message{Type: gpaxos.MsgAppend, From: from, To: to, Commit: gpaxos.Zxid(commit)}
}

// waitStats polls tr's statistics until want holds or five seconds pass and
// returns the last ones read. The reader counts a delivery just after the
// Recv channel hands the message over, so a test that has just received a
// message can read the count a moment before it moves.
func waitStats(tr *Transport, want func(Stats) bool) (Stats, bool) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := tr.Stats()
		if want(s) || time.Now().After(deadline) {
			return s, want(s)
		}
		time.Sleep(time.Millisecond)
	}
}
