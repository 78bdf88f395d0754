package console

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// TestRecorderPercentiles: a second's percentiles come from its own
// requests, within a bucket's width, and the ring keeps the newest Keep.
func TestRecorderPercentiles(t *testing.T) {
	r := NewRecorder()
	t0 := time.UnixMilli(1_000_000)
	for i := 1; i <= 100; i++ {
		r.Request(i%2 == 0, time.Duration(i)*time.Millisecond)
	}
	r.Sync(10, 2*time.Millisecond)
	r.Sync(30, 4*time.Millisecond)
	s := r.Roll(t0)
	if s.Writes != 50 || s.Reads != 50 || s.At != t0.UnixMilli() {
		t.Fatalf("sample %+v: want 50 writes, 50 reads at %d", s, t0.UnixMilli())
	}
	within := func(got, want float64) bool { return got >= want && got <= want*bucketGrowth }
	if !within(s.P50Ms, 50) || !within(s.P99Ms, 99) {
		t.Errorf("p50 %v p99 %v, want about 50 and 99 ms (at most %v above)", s.P50Ms, s.P99Ms, bucketGrowth)
	}
	if s.Fsyncs != 2 || s.FsyncBatch != 20 || s.FsyncMs != 3 {
		t.Errorf("fsyncs %d batch %v ms %v, want 2, 20, 3", s.Fsyncs, s.FsyncBatch, s.FsyncMs)
	}
	if e := r.Roll(t0.Add(time.Second)); e.Writes+e.Reads != 0 || e.P99Ms != 0 || e.Fsyncs != 0 {
		t.Errorf("an idle second: %+v", e)
	}
	for i := 2; i < Keep+10; i++ {
		r.Roll(t0.Add(time.Duration(i) * time.Second))
	}
	got := r.Samples()
	if len(got) != Keep || got[0].At != t0.Add(10*time.Second).UnixMilli() || got[Keep-1] != r.Latest() {
		t.Errorf("%d samples from %d to %d, want %d from %d", len(got), got[0].At, got[len(got)-1].At,
			Keep, t0.Add(10*time.Second).UnixMilli())
	}
}

// TestGatherFindsLeaderCoordinatorsAndTrees: from the members' reports,
// the view names the leader, each group's coordinator (reported, or
// followed by the group when its coordinator does not answer), the tree
// the topology gives around the coordinator's down list, the lag behind
// the leader, and the members that do not answer.
func TestGatherFindsLeaderCoordinatorsAndTrees(t *testing.T) {
	reports := map[string]Self{
		"a1": {ID: 1, Role: "leader", Group: 0, Epoch: 3, Applied: "0x300000010"},
		"a2": {ID: 2, Role: "acceptor", Group: 0, Coordinator: 1, Applied: "0x30000000c"},
		"a3": {ID: 3, Role: "acceptor", Group: 0, Coordinator: 1, Applied: "0x200000009"},
		"a4": {ID: 4, Role: "coordinator", Group: 1, Down: []quorum.ID{6}, Applied: "0x300000010"},
		"a5": {ID: 5, Role: "acceptor", Group: 1, Coordinator: 4},
		// 6 does not answer; group 2's coordinator, 7, neither.
		"a8": {ID: 8, Role: "acceptor", Group: 2, Coordinator: 7},
		"a9": {ID: 9, Role: "acceptor", Group: 2, Coordinator: 7},
	}
	fetch := func(_ context.Context, admin string) (Self, error) {
		if s, ok := reports[admin]; ok {
			return s, nil
		}
		return Self{}, errors.New("connection refused")
	}
	v := View{Self: reports["a1"], Groups: [][]quorum.ID{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}},
		Topology: gpaxos.TreeTopology{Fanout: 1}, Trees: 3, Children: 1}
	for id := quorum.ID(1); id <= 9; id++ {
		v.Peers = append(v.Peers, Peer{ID: id, Admin: "a" + string(rune('0'+id))})
	}
	e := Gather(context.Background(), v, fetch)
	if e.Leader != 1 || e.Epoch != 3 || e.AnsweredBy != 1 {
		t.Fatalf("leader %d epoch %d by %d, want 1, 3, 1", e.Leader, e.Epoch, e.AnsweredBy)
	}
	for i, want := range []quorum.ID{1, 4, 7} {
		if e.Groups[i].Coordinator != want {
			t.Errorf("group %d coordinator %d, want %d", i, e.Groups[i].Coordinator, want)
		}
	}
	// Fan-out 1: a chain from the coordinator, the down member last.
	if got, want := e.Groups[1].Edges, [][2]quorum.ID{{4, 5}, {5, 6}}; !slices.Equal(got, want) {
		t.Errorf("group 1 tree %v, want %v", got, want)
	}
	if got, want := e.Groups[0].Edges, [][2]quorum.ID{{1, 2}, {2, 3}}; !slices.Equal(got, want) {
		t.Errorf("group 0 tree %v, want %v", got, want)
	}
	lags := map[quorum.ID]int64{1: 0, 2: 4, 3: -1, 4: 0, 6: -1}
	for _, m := range e.Members {
		if want, ok := lags[m.ID]; ok && m.Lag != want {
			t.Errorf("server %d lag %d, want %d", m.ID, m.Lag, want)
		}
		if down := m.ID == 6 || m.ID == 7; down != !m.Reachable || (down && (m.Role != RoleUnreachable || m.Error == "")) {
			t.Errorf("server %d: reachable %v role %q error %q", m.ID, m.Reachable, m.Role, m.Error)
		}
	}
}

// TestJournalNotesChanges: the first report is noted as it is; later ones
// note a new leader or epoch, a new role and a new membership, once each,
// and nothing when nothing changed. A first state read before a change
// that is already noted is not noted.
func TestJournalNotesChanges(t *testing.T) {
	var j Journal
	t0 := time.UnixMilli(5000)
	s := Self{ID: 2, Role: "acceptor", Leader: 1, Epoch: 1}
	j.Start(t0, s)
	j.ObserveMembers(t0, 2, []quorum.ID{1, 2, 3})
	j.Start(t0.Add(time.Second), Self{ID: 2, Role: "acceptor"})
	j.Observe(t0.Add(time.Second), s)
	j.ObserveMembers(t0.Add(time.Second), 2, []quorum.ID{1, 2, 3})
	s.Role, s.Leader, s.Epoch = "leader", 2, 2
	j.Observe(t0.Add(2*time.Second), s)
	j.ObserveMembers(t0.Add(2*time.Second), 2, []quorum.ID{2, 3})
	ev := j.Events()
	want := []Event{
		{At: 5000, Server: 2, Kind: "leader", Text: "leader 1, epoch 1"},
		{At: 5000, Server: 2, Kind: "role", Text: "server 2: acceptor"},
		{At: 5000, Server: 2, Kind: "membership", Text: "members [1 2 3]"},
		{At: 7000, Server: 2, Kind: "leader", Text: "leader 2, epoch 2"},
		{At: 7000, Server: 2, Kind: "role", Text: "server 2: leader, was acceptor"},
		{At: 7000, Server: 2, Kind: "membership", Text: "members [2 3]"},
	}
	if !slices.Equal(ev, want) {
		t.Errorf("events %v, want %v", ev, want)
	}
}
