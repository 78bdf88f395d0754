package server

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	dto "github.com/prometheus/client_model/go"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// chanNet is an in-process network for ensemble members in one test
// process: it isolates the server's replication logic from the TCP
// transport, which the process-level tests in itest exercise.
type chanNet struct {
	mu    sync.Mutex
	boxes map[gpaxos.ID]chan []gpaxos.Message
}

type chanTransport struct {
	nw *chanNet
	id gpaxos.ID
}

func (t *chanTransport) Send(m gpaxos.Message) {
	t.nw.mu.Lock()
	box := t.nw.boxes[m.To]
	t.nw.mu.Unlock()
	if box != nil {
		select {
		case box <- []gpaxos.Message{m}:
		default:
		}
	}
}

func (t *chanTransport) Recv() <-chan []gpaxos.Message {
	t.nw.mu.Lock()
	defer t.nw.mu.Unlock()
	return t.nw.boxes[t.id]
}

func (t *chanTransport) Close() error { return nil }

func startInProcessEnsemble(t *testing.T, n int, classic bool, mutate ...func(*Config)) []*Server {
	nw := &chanNet{boxes: map[gpaxos.ID]chan []gpaxos.Message{}}
	old := newPeerTransport
	newPeerTransport = func(s *Server, peers map[gpaxos.ID]string) (peerTransport, error) {
		id := s.cfg.ServerID
		nw.mu.Lock()
		if nw.boxes[id] == nil {
			nw.boxes[id] = make(chan []gpaxos.Message, 100000)
		}
		nw.mu.Unlock()
		return &chanTransport{nw: nw, id: id}, nil
	}
	t.Cleanup(func() { newPeerTransport = old })
	var peers []members.Member
	for i := 1; i <= n; i++ {
		peers = append(peers, members.Member{ID: members.ID(i), Peer: fmt.Sprintf("127.0.0.1:%d", 1)})
	}
	var out []*Server
	for i := 1; i <= n; i++ {
		cfg := DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.ClientAddr = "127.0.0.1"
		cfg.ClientPort = 0
		cfg.TickTime = 100 * time.Millisecond
		cfg.FourLetterWords = []string{"*"}
		cfg.ServerID = members.ID(i)
		cfg.ForceSync = false
		cfg.Ensemble = Ensemble{Members: peers, Shape: members.Shape{Trees: 3, Children: 3, Classic: classic}, Tick: 10 * time.Millisecond}
		for _, m := range mutate {
			m(&cfg)
		}
		s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
	}
	return out
}

func TestInProcessEnsembleReplicates(t *testing.T) {
	for _, tc := range []struct {
		n       int
		classic bool
	}{{3, true}, {9, false}} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			srvs := startInProcessEnsemble(t, tc.n, tc.classic)
			var conns []*zk.Conn
			for _, s := range srvs {
				c, ev, err := zk.Connect([]string{s.Addr().String()}, 5*time.Second, zk.WithLogInfo(false))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				deadline := time.After(20 * time.Second)
				for c.State() != zk.StateHasSession {
					select {
					case <-ev:
					case <-deadline:
						t.Fatal("no session")
					}
				}
				conns = append(conns, c)
			}
			if _, err := conns[0].Create("/x", []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			for i, c := range conns {
				if _, err := c.Sync("/x"); err != nil {
					t.Fatal(err)
				}
				d, _, err := c.Get("/x")
				if err != nil || string(d) != "1" {
					t.Fatalf("server %d: %q %v", i+1, d, err)
				}
			}
			for i := 0; i < 100; i++ {
				if _, err := conns[i%len(conns)].Create(fmt.Sprintf("/x/n%03d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatal(err)
				}
			}
			last := conns[len(conns)-1]
			last.Sync("/x")
			kids, _, err := last.Children("/x")
			if err != nil || len(kids) != 100 {
				t.Fatalf("%d children, %v", len(kids), err)
			}
			// Every server logs the 101 creates and says so in its fsync
			// metrics. A write is answered once a quorum holds it, which
			// need not include every server: the last may still be
			// writing it.
			for i, s := range srvs {
				waitFor(t, fmt.Sprintf("server %d to log at least 101 entries", i+1), func() bool {
					var m dto.Metric
					if err := s.metrics.batchSize.Write(&m); err != nil {
						t.Fatal(err)
					}
					h := m.GetHistogram()
					return h.GetSampleCount() > 0 && h.GetSampleSum() >= 101
				})
			}
		})
	}
}

// TestInProcessEnsembleLeaderFailover: the leader's server stops; clients
// of the others keep writing once a new leader is elected, and sessions
// connected to the old leader move with their ephemerals.
func TestInProcessEnsembleLeaderFailover(t *testing.T) {
	srvs := startInProcessEnsemble(t, 3, true)
	var leader *Server
	deadline := time.Now().Add(10 * time.Second)
	for leader == nil && time.Now().Before(deadline) {
		for _, s := range srvs {
			if s.isLeader() {
				leader = s
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if leader == nil {
		t.Fatal("no leader")
	}
	var addrs []string
	addrs = append(addrs, leader.Addr().String())
	for _, s := range srvs {
		if s != leader {
			addrs = append(addrs, s.Addr().String())
		}
	}
	c, ev, err := zk.Connect(addrs, 3*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for c.State() != zk.StateHasSession {
		<-ev
	}
	if _, err := c.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sid := c.SessionID()
	leader.Close()
	start := time.Now()
	for {
		_, err := c.Create(fmt.Sprintf("/after-%d", time.Now().UnixNano()), nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no write accepted after the leader stopped: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("first write after the leader stopped: %v", time.Since(start))
	if c.SessionID() != sid {
		t.Fatal("session changed")
	}
	if ok, _, err := c.Exists("/eph"); err != nil || !ok {
		t.Fatalf("ephemeral lost: %v %v", ok, err)
	}
}
