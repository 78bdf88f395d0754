package replica

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// answerAtLeader gives every replica of c, from its next start, an
// OnLeaderAppend that answers each proposal whose body starts with "w-"
// early, with the body plus "!" as its result, as the server answers weak
// writes. It records what each leader heard.
func answerAtLeader(c *cluster) (heard func(gpaxos.ID) []LeaderAppend) {
	var mu sync.Mutex
	log := map[gpaxos.ID][]LeaderAppend{}
	c.onLeaderAppend = func(at gpaxos.ID) func(LeaderAppend) {
		return func(la LeaderAppend) {
			mu.Lock()
			log[at] = append(log[at], la)
			mu.Unlock()
			var out []EarlyReply
			for _, e := range la.Entries {
				if e.Zxid.Epoch() == la.Epoch && strings.HasPrefix(string(e.Body), "w-") {
					out = append(out, EarlyReply{Origin: e.Origin, Inc: e.Inc, Stream: e.Stream, Seq: e.Seq,
						Zxid: e.Zxid, Result: append([]byte(string(e.Body)), '!')})
				}
			}
			if len(out) > 0 {
				// The hook must not block: the server answers from its own
				// goroutine too.
				go c.rep(at).SendEarly(out)
			}
		}
	}
	return func(id gpaxos.ID) []LeaderAppend {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(log[id])
	}
}

// restartAll restarts every replica of c, so that hooks set since apply.
func (c *cluster) restartAll() {
	for id := range c.all() {
		c.stop(id)
		c.start(id, gpaxos.StarTopology{})
	}
}

// follower returns a replica other than l.
func (c *cluster) follower(l *Replica) *Replica {
	for id, r := range c.all() {
		if id != l.cfg.ID {
			return r
		}
	}
	c.t.Fatal("no follower")
	return nil
}

// TestEarlyRepliesReachTheirOrigin: the leader hears each entry it orders
// before it commits, and an early reply reaches the proposal's origin,
// a follower or the leader itself, with the zxid the entry then commits
// at, before that commit and at most once. The followers' acknowledgments
// are held back until every reply arrived: with no fsync here a commit
// would otherwise often win the race, and then answers instead.
func TestEarlyRepliesReachTheirOrigin(t *testing.T) {
	c := newCluster(t, grid(1, 3), gpaxos.StarTopology{})
	heard := answerAtLeader(c)
	c.leader()
	c.restartAll()
	l, f := c.settledLeader()
	c.nw.mu.Lock()
	c.nw.drop = func(m gpaxos.Message) bool {
		return m.To == l.cfg.ID && (m.Type == gpaxos.MsgGAck || m.Type == gpaxos.MsgGroupAck)
	}
	c.nw.mu.Unlock()
	const n = 50
	for i := 0; i < n; i++ {
		for _, r := range []*Replica{f, l} {
			if err := r.Propose([]byte(fmt.Sprintf("w-%d-%02d", r.cfg.ID, i)), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		done := len(c.early[f.cfg.ID]) == n && len(c.early[l.cfg.ID]) == n
		early := fmt.Sprint(c.early)
		c.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("early replies: %v", early)
		}
		time.Sleep(time.Millisecond)
	}
	c.nw.mu.Lock()
	c.nw.drop = nil
	c.nw.mu.Unlock()
	for _, r := range []*Replica{f, l} {
		c.waitDelivered([]gpaxos.ID{r.cfg.ID}, fmt.Sprintf("w-%d-%02d", r.cfg.ID, n-1))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range []*Replica{f, l} {
		id := r.cfg.ID
		if len(c.early[id]) == 0 {
			t.Errorf("server %d: no early reply", id)
		}
		if c.lateEarly[id] > 0 {
			t.Errorf("server %d: %d early replies delivered after their commit", id, c.lateEarly[id])
		}
		seen := map[string]bool{}
		for _, e := range c.early[id] {
			var body string
			var zxid gpaxos.Zxid
			at := strings.LastIndexByte(e, '@')
			body = strings.TrimSuffix(e[:at], "!")
			fmt.Sscan(e[at+1:], &zxid)
			if seen[body] {
				t.Errorf("server %d: %s answered twice", id, body)
			}
			seen[body] = true
			if c.zxids[id][body] != zxid {
				t.Errorf("server %d: %s answered at zxid %v, committed at %v", id, body, zxid, c.zxids[id][body])
			}
			if !strings.HasPrefix(body, fmt.Sprintf("w-%d-", id)) {
				t.Errorf("server %d got the early reply of %s", id, body)
			}
		}
	}
	starts := 0
	for _, la := range heard(l.cfg.ID) {
		if la.Start && la.Epoch == l.Status().Epoch && len(la.Entries) > 0 {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("the leader was told %d times that its epoch began: %+v", starts, heard(l.cfg.ID))
	}
}

// settledLeader returns the leader and a follower that follows it and has
// seen a proposal of its own commit in the leader's epoch.
func (c *cluster) settledLeader() (l, f *Replica) {
	c.t.Helper()
	for i := 0; i < 100; i++ {
		l = c.leader()
		f = c.follower(l)
		c.proposeRetry(f, fmt.Sprintf("warm%d", i))
		st, lst := f.Status(), l.Status()
		if lst.Role == RoleLeader && st.HardState.Leader == l.cfg.ID && lst.Epoch == st.Epoch {
			return l, f
		}
	}
	c.t.Fatal("no settled leader")
	return nil, nil
}

// TestAnsweredProposalIsNeverOrderedAgain: a follower's proposal answered
// early by a leader that then fails before any other server holds it is
// not resent to the next leader (a copy ordered later could have another
// result than the one its client was told): the follower abandons its
// stream, and the proposal commits nowhere. An early reply that its
// application had not received when the change settled would have been
// resent instead.
func TestAnsweredProposalIsNeverOrderedAgain(t *testing.T) {
	c := newCluster(t, grid(1, 3), gpaxos.StarTopology{})
	answerAtLeader(c)
	c.leader()
	c.restartAll()
	l, f := c.settledLeader()
	// The leader's appends reach nobody from now on; its early replies do.
	c.nw.mu.Lock()
	c.nw.drop = func(m gpaxos.Message) bool { return m.From == l.cfg.ID && m.Type != gpaxos.MsgEarlyReply }
	c.nw.mu.Unlock()
	if err := f.Propose([]byte("w-lost"), nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		n := len(c.early[f.cfg.ID])
		c.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no early reply reached the follower")
		}
		time.Sleep(time.Millisecond)
	}
	c.stop(l.cfg.ID)
	c.nw.mu.Lock()
	c.nw.drop = nil
	c.nw.mu.Unlock()
	c.proposeRetry(f, "after")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aband[f.cfg.ID] == 0 {
		t.Error("the follower did not abandon the stream of its answered proposal")
	}
	for id, got := range c.got {
		if id != l.cfg.ID && slices.Contains(got, "w-lost") {
			t.Errorf("server %d committed the lost proposal: %v", id, got)
		}
	}
}

// TestSkipSyncOnlyForProposalsItNames: a Ready appending only proposals
// SkipSync names, with no change of votes, is written without an fsync;
// one with another proposal, a no-op or a new promise is fsynced.
func TestSkipSyncOnlyForProposalsItNames(t *testing.T) {
	st, _, err := openStorage(t.TempDir(), false, quiet, grid(1, 3), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	syncs := 0
	st.onSync = func(int, time.Duration) { syncs++ }
	st.skipSync = func(body []byte) bool { return strings.HasPrefix(string(body), "weak") }
	counter := uint32(0)
	prop := func(body string) gpaxos.Entry {
		counter++
		hd := proposalHeader{Origin: 2, Inc: 1, Stream: 1, Seq: uint64(counter)}
		return gpaxos.Entry{Zxid: gpaxos.MakeZxid(2, counter), Type: gpaxos.EntryNormal, Data: append(hd.append(nil), body...)}
	}
	hs := gpaxos.HardState{Promised: 2, Leader: 2, Current: 2}
	for _, tc := range []struct {
		name string
		rd   gpaxos.Ready
		sync bool
	}{
		{"a new promise", gpaxos.Ready{HardState: &hs, Entries: []gpaxos.Entry{prop("weak 1")}}, true},
		{"weak proposals only", gpaxos.Ready{Entries: []gpaxos.Entry{prop("weak 2"), prop("weak 3")}}, false},
		{"a commit hint only changes", gpaxos.Ready{HardState: &gpaxos.HardState{Promised: 2, Leader: 2, Current: 2,
			Commit: gpaxos.MakeZxid(2, 2)}, Entries: []gpaxos.Entry{prop("weak 4")}}, false},
		{"a strong proposal among them", gpaxos.Ready{Entries: []gpaxos.Entry{prop("weak 5"), prop("strong")}}, true},
		{"a no-op", gpaxos.Ready{Entries: []gpaxos.Entry{{Zxid: gpaxos.MakeZxid(2, 100), Type: gpaxos.EntryNoop}}}, true},
	} {
		before := syncs
		if err := st.persist(&tc.rd); err != nil {
			t.Fatal(err)
		}
		if got := syncs > before; got != tc.sync {
			t.Errorf("%s: fsynced %v, want %v", tc.name, got, tc.sync)
		}
	}
}
