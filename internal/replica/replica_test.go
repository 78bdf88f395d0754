package replica

import (
	"fmt"

	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// memNet connects replicas in one process through channels. The cluster
// tests run the real TCP transport between processes; this one isolates
// the replica's own logic.
type memNet struct {
	mu    sync.Mutex
	boxes map[gpaxos.ID]chan []gpaxos.Message
	cut   map[gpaxos.ID]bool
	// drop, when set, loses the messages it returns true for.
	drop func(gpaxos.Message) bool
}

type memTransport struct {
	nw *memNet
	id gpaxos.ID
}

func (t memTransport) Send(m gpaxos.Message) {
	t.nw.mu.Lock()
	box, cut := t.nw.boxes[m.To], t.nw.cut[m.To] || t.nw.cut[t.id]
	if t.nw.drop != nil && t.nw.drop(m) {
		cut = true
	}
	t.nw.mu.Unlock()
	if box == nil || cut {
		return
	}
	select {
	case box <- []gpaxos.Message{m}:
	default: // full: lost, as on a real network
	}
}

func (t memTransport) Recv() <-chan []gpaxos.Message {
	t.nw.mu.Lock()
	defer t.nw.mu.Unlock()
	return t.nw.boxes[t.id]
}

// cluster is a set of replicas and what each delivered.
type cluster struct {
	t      *testing.T
	nw     *memNet
	voters quorum.Config
	dirs   map[gpaxos.ID]string
	reps   map[gpaxos.ID]*Replica
	mu     sync.Mutex
	got    map[gpaxos.ID][]string
	aband  map[gpaxos.ID]int
	// early records, per replica, the early replies it delivered, as
	// "result@zxid", and where among its entries ("early:" in got).
	early map[gpaxos.ID][]string
	// lateEarly counts the early replies delivered after the commit of
	// their proposal (early_test.go's results are the body and "!").
	lateEarly map[gpaxos.ID]int
	// zxids records the zxid each body committed at, per replica.
	zxids map[gpaxos.ID]map[string]gpaxos.Zxid
	// onLeaderReceived and onLeaderAppend, when set, give each replica
	// started from now on these hooks.
	onLeaderReceived func(at gpaxos.ID) func(gpaxos.ID, []byte)
	onLeaderAppend   func(at gpaxos.ID) func(LeaderAppend)
}

func newCluster(t *testing.T, voters quorum.Config, topo gpaxos.Topology) *cluster {
	return newClusterFrom(t, voters, topo, nil)
}

// newClusterFrom is newCluster whose replicas' directories prepare fills
// (when not nil) before they start.
func newClusterFrom(t *testing.T, voters quorum.Config, topo gpaxos.Topology, prepare func(id gpaxos.ID, dir string)) *cluster {
	c := &cluster{t: t, nw: &memNet{boxes: map[gpaxos.ID]chan []gpaxos.Message{}, cut: map[gpaxos.ID]bool{}},
		voters: voters, dirs: map[gpaxos.ID]string{}, reps: map[gpaxos.ID]*Replica{}, got: map[gpaxos.ID][]string{},
		aband: map[gpaxos.ID]int{}, early: map[gpaxos.ID][]string{},
		zxids: map[gpaxos.ID]map[string]gpaxos.Zxid{}, lateEarly: map[gpaxos.ID]int{}}
	// Every mailbox exists before any replica runs: the running ones read
	// the map.
	for _, g := range voters.Groups {
		for _, id := range g {
			c.dirs[id] = filepath.Join(t.TempDir(), "replica")
			if prepare != nil {
				prepare(id, c.dirs[id])
			}
			c.nw.boxes[id] = make(chan []gpaxos.Message, 10000)
		}
	}
	for _, g := range voters.Groups {
		for _, id := range g {
			c.start(id, topo)
		}
	}
	t.Cleanup(func() {
		for _, r := range c.all() {
			r.Stop()
		}
	})
	return c
}

func (c *cluster) start(id gpaxos.ID, topo gpaxos.Topology) {
	cfg := Config{ID: id, Voters: c.voters, Topology: topo, Dir: c.dirs[id], Tick: 5 * time.Millisecond,
		NoSync: true, Transport: memTransport{c.nw, id}, Logger: testLogger, Seed: int64(id)}
	if c.onLeaderReceived != nil {
		cfg.OnLeaderReceived = c.onLeaderReceived(id)
	}
	if c.onLeaderAppend != nil {
		cfg.OnLeaderAppend, cfg.AcceptEarly = c.onLeaderAppend(id), true
	}
	r, err := Open(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.reps[id] = r
	c.got[id] = nil
	c.mu.Unlock()
	r.Start()
	go func() {
		for d := range r.Deliveries() {
			c.mu.Lock()
			if d.Snapshot != nil {
				c.got[id] = []string{"snap:" + string(d.Snapshot.Data)}
			}
			for _, e := range d.Entries {
				if !e.Noop {
					c.got[id] = append(c.got[id], string(e.Body))
					if c.zxids[id] == nil {
						c.zxids[id] = map[string]gpaxos.Zxid{}
					}
					c.zxids[id][string(e.Body)] = e.Zxid
				}
			}
			for _, e := range d.Early {
				c.early[id] = append(c.early[id], fmt.Sprintf("%s@%d", e.Result, e.Zxid))
				if _, done := c.zxids[id][strings.TrimSuffix(string(e.Result), "!")]; done {
					c.lateEarly[id]++
				}
			}
			if d.Abandoned != 0 {
				c.aband[id]++
			}
			c.mu.Unlock()
		}
	}()
}

// all returns the replicas (the map changes when one restarts).
func (c *cluster) all() map[gpaxos.ID]*Replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.reps)
}

// rep returns replica id.
func (c *cluster) rep(id gpaxos.ID) *Replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reps[id]
}

// waitAll waits until every running replica delivered want.
func (c *cluster) waitAll(want []string, skip gpaxos.ID) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		c.mu.Lock()
		for id := range c.reps {
			if id != skip && !slices.Equal(c.got[id], want) {
				ok = false
			}
		}
		c.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.Fatalf("not delivered everywhere; want %v, got %v", want, c.got)
}

func (c *cluster) leader() *Replica {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range c.all() {
			if r.Status().Role == RoleLeader {
				return r
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no leader")
	return nil
}

// proposeRetry proposes body from r until it commits (a proposal can be
// abandoned while the ensemble elects its leader).
func (c *cluster) proposeRetry(r *Replica, body string) {
	c.t.Helper()
	for i := 0; i < 200; i++ {
		if err := r.Propose([]byte(body), nil); err != nil {
			c.t.Fatal(err)
		}
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			c.mu.Lock()
			done := slices.Contains(c.got[r.cfg.ID], body)
			c.mu.Unlock()
			if done {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	c.t.Fatalf("%s never committed", body)
}

func grid(groups, size int) quorum.Config {
	var v quorum.Config
	id := gpaxos.ID(1)
	for g := 0; g < groups; g++ {
		var m []gpaxos.ID
		for i := 0; i < size; i++ {
			m = append(m, id)
			id++
		}
		v.Groups = append(v.Groups, m)
	}
	return v
}

func TestReplicasAgreeAndKeepClientOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		voters quorum.Config
		topo   gpaxos.Topology
	}{
		{"classic-3", grid(1, 3), gpaxos.StarTopology{}},
		{"forest-9-3-3", grid(3, 3), gpaxos.TreeTopology{Fanout: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, tc.voters, tc.topo)
			c.leader()
			var want []string
			for id := range c.all() {
				c.proposeRetry(c.rep(id), fmt.Sprintf("first-%d", id))
			}
			lid := c.leader().cfg.ID
			c.mu.Lock()
			want = slices.Clone(c.got[lid])
			c.mu.Unlock()
			// Pipelined: every origin proposes 50 entries without waiting;
			// each origin's entries must commit in its order.
			for id, r := range c.all() {
				for i := 0; i < 50; i++ {
					if err := r.Propose([]byte(fmt.Sprintf("p-%d-%03d", id, i)), nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			time.Sleep(500 * time.Millisecond)
			lid = c.leader().cfg.ID
			c.mu.Lock()
			ref := slices.Clone(c.got[lid])
			c.mu.Unlock()
			if !slices.Equal(ref[:len(want)], want) {
				t.Fatalf("prefix changed")
			}
			c.waitAll(ref, 0)
			last := map[string]string{}
			for _, s := range ref[len(want):] {
				var id, i int
				fmt.Sscanf(s, "p-%d-%d", &id, &i)
				k := fmt.Sprint(id)
				if prev, ok := last[k]; ok && prev >= s {
					t.Fatalf("origin %d out of order: %s after %s", id, s, prev)
				}
				last[k] = s
			}
		})
	}
}

func TestReplicaRestartRecovers(t *testing.T) {
	c := newCluster(t, grid(1, 3), gpaxos.StarTopology{})
	l := c.leader()
	for i := 0; i < 5; i++ {
		c.proposeRetry(l, fmt.Sprintf("v%d", i))
	}
	want := []string{"v0", "v1", "v2", "v3", "v4"}
	c.waitAll(want, 0)
	// Restart a follower from its directory: it delivers the same history.
	var f gpaxos.ID
	for id := range c.all() {
		if id != l.cfg.ID {
			f = id
			break
		}
	}
	c.rep(f).Stop()
	c.start(f, gpaxos.StarTopology{})
	c.waitAll(want, 0)
	// Restart the leader: a new one is elected and the history survives.
	lid := c.leader().cfg.ID
	c.rep(lid).Stop()
	c.start(lid, gpaxos.StarTopology{})
	c.proposeRetry(c.leader(), "after")
	c.waitAll(append(want, "after"), 0)
}

var testLogger = slog.New(slog.NewTextHandler(io.Discard, nil))
