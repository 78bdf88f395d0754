package gpaxos

import (
	"fmt"
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

func TestBroadcastCommitsEverywhere(t *testing.T) {
	tests := []struct {
		name  string
		cfg   func() *net
		nodes int
	}{
		{"classic-3", func() *net { return newNet(t, grid(1, 3), StarTopology{}) }, 3},
		{"classic-7", func() *net { return newNet(t, grid(1, 7), StarTopology{}) }, 7},
		{"forest-9-3-3", func() *net { return newNet(t, grid(3, 3), TreeTopology{Fanout: 3}) }, 9},
		{"forest-20-4-2", func() *net { return newNet(t, grid(4, 5), TreeTopology{Fanout: 2}) }, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nw := tt.cfg()
			nw.tick(40)
			gl := nw.leader()
			if gl == nil {
				t.Fatal("no leader elected")
			}
			var want []string
			for i := 0; i < 50; i++ {
				p := fmt.Sprintf("p%d", i)
				want = append(want, p)
				if err := gl.Propose([]byte(p)); err != nil {
					t.Fatal(err)
				}
				if i%7 == 0 {
					nw.settle() // several batches in flight: pipelining
				}
			}
			nw.tick(5)
			for _, id := range nw.order {
				if got := nw.payloads(id); !slices.Equal(got, want) {
					t.Fatalf("server %d applied %v, want %v", id, got, want)
				}
			}
		})
	}
}

// TestLeaderFailover: after the GL crashes, another coordinator is elected
// with a newer epoch, everything committed survives, and new writes commit.
func TestLeaderFailover(t *testing.T) {
	for _, tc := range []struct {
		name string
		nw   func() *net
	}{
		{"classic", func() *net { return newNet(t, grid(1, 5), StarTopology{}) }},
		{"forest", func() *net { return newNet(t, grid(3, 3), TreeTopology{Fanout: 2}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nw := tc.nw()
			nw.tick(40)
			old := nw.leader()
			old.Propose([]byte("before"))
			nw.tick(3)
			nw.down[old.ID()] = true
			nw.tick(60)
			gl := nw.leader()
			if gl == nil || gl == old {
				t.Fatal("no new leader")
			}
			if gl.Status().HardState.Promised <= old.Status().HardState.Promised {
				t.Fatal("new leader did not take a newer epoch")
			}
			gl.Propose([]byte("after"))
			nw.tick(5)
			for _, id := range nw.order {
				if nw.down[id] {
					continue
				}
				if got := nw.payloads(id); !slices.Equal(got, []string{"before", "after"}) {
					t.Fatalf("server %d applied %v", id, got)
				}
			}
		})
	}
}

// TestCoordinatorFailover: a crashed GC (not the leader) is replaced by the
// next member of its group under a newer group epoch; the group keeps
// learning.
func TestCoordinatorFailover(t *testing.T) {
	nw := newNet(t, grid(3, 3), TreeTopology{Fanout: 2})
	nw.tick(40)
	gl := nw.leader()
	var victim *Node
	for _, id := range nw.order {
		n := nw.nodes[id]
		if n.Status().Coordinator && n != gl {
			victim = n
			break
		}
	}
	if victim == nil {
		t.Fatal("no coordinator besides the leader")
	}
	ge := victim.Status().HardState.GroupEpoch
	nw.down[victim.ID()] = true
	nw.tick(40)
	var repl *Node
	for _, id := range nw.voters().Groups[victim.Status().Group] {
		if n := nw.nodes[id]; !nw.down[id] && n.Status().Coordinator {
			repl = n
		}
	}
	if repl == nil || repl.Status().HardState.GroupEpoch <= ge {
		t.Fatal("group did not elect a new coordinator with a newer group epoch")
	}
	gl.Propose([]byte("x"))
	nw.tick(5)
	for _, id := range nw.voters().Groups[victim.Status().Group] {
		if !nw.down[id] && !slices.Equal(nw.payloads(id), []string{"x"}) {
			t.Fatalf("server %d of the recovered group applied %v", id, nw.payloads(id))
		}
	}
}

// TestStaleLeaderFenced: an Append of an older epoch changes nothing at an
// acceptor that promised a newer one, and the sender learns it is stale.
func TestStaleLeaderFenced(t *testing.T) {
	nw := newNet(t, grid(1, 3), StarTopology{})
	nw.tick(40)
	gl := nw.leader()
	var f *Node
	for _, id := range nw.order {
		if nw.nodes[id] != gl {
			f = nw.nodes[id]
			break
		}
	}
	e := f.Status().HardState.Promised
	last := f.Status().Last
	f.Step(Message{Type: MsgGroupAppend, From: 99, Epoch: e - 1, Coord: gl.ID(), Group: 0,
		GroupEpoch: f.Status().HardState.GroupEpoch, Prev: last, Entries: []Entry{{Zxid: MakeZxid(e-1, 99)}}})
	if f.Status().Last != last {
		t.Fatal("acceptor took an entry of an older epoch")
	}
}

// voters returns the ensemble's voting configuration.
func (nw *net) voters() quorum.Config { return nw.nodes[nw.order[0]].voters }

func TestTopology(t *testing.T) {
	members := []ID{1, 2, 3, 4, 5, 6, 7}
	tr := TreeTopology{Fanout: 2}
	if got := tr.Children(members, 1, nil, 1); !slices.Equal(got, []ID{2, 3}) {
		t.Fatalf("root children %v", got)
	}
	if got := tr.Children(members, 1, nil, 2); !slices.Equal(got, []ID{4, 5}) {
		t.Fatalf("children of 2: %v", got)
	}
	// Rooted at 3 with 4 down: 4 becomes a leaf at the end, never interior.
	if got := tr.Children(members, 3, []ID{4}, 3); !slices.Equal(got, []ID{5, 6}) {
		t.Fatalf("rotated root children %v", got)
	}
	if got := tr.Children(members, 3, []ID{4}, 4); len(got) != 0 {
		t.Fatalf("a down member forwards to %v", got)
	}
	seen := map[ID]int{}
	var walk func(id ID)
	walk = func(id ID) {
		seen[id]++
		for _, c := range tr.Children(members, 3, []ID{4}, id) {
			walk(c)
		}
	}
	walk(3)
	for _, id := range members {
		if seen[id] != 1 {
			t.Fatalf("member %d reached %d times", id, seen[id])
		}
	}
	if got := (StarTopology{}).Children(members, 1, nil, 1); len(got) != 6 {
		t.Fatalf("star: %v", got)
	}
}

func TestZxid(t *testing.T) {
	z := MakeZxid(7, 42)
	if z.Epoch() != 7 || z.Counter() != 42 || MakeZxid(8, 1) <= MakeZxid(7, 1<<31) {
		t.Fatal("zxid layout")
	}
}

func TestLog(t *testing.T) {
	var l memLog
	for i := uint32(1); i <= 5; i++ {
		l.ents = append(l.ents, Entry{Zxid: MakeZxid(1, i)})
	}
	if !l.contains(MakeZxid(1, 3)) || l.contains(MakeZxid(2, 1)) {
		t.Fatal("contains")
	}
	if e, ok := l.after(MakeZxid(1, 3), 0); !ok || len(e) != 2 {
		t.Fatal("after")
	}
	l.compact(Snapshot{Index: MakeZxid(1, 2)}, MakeZxid(1, 2))
	if _, ok := l.after(MakeZxid(1, 1), 0); ok {
		t.Fatal("after must fail below the snapshot")
	}
	l.truncateAfter(MakeZxid(1, 4))
	if l.last() != MakeZxid(1, 4) {
		t.Fatal("truncate")
	}
}

// TestLogKeepsEntriesBehindSnapshot checks that a compaction keeps the
// entries a pinned snapshot's receiver will need, and that the next one
// drops them.
func TestLogKeepsEntriesBehindSnapshot(t *testing.T) {
	var l memLog
	for i := uint32(1); i <= 9; i++ {
		l.ents = append(l.ents, Entry{Zxid: MakeZxid(1, i)})
	}
	l.compact(Snapshot{Index: MakeZxid(1, 3)}, MakeZxid(1, 3))
	l.compact(Snapshot{Index: MakeZxid(1, 6)}, MakeZxid(1, 3))
	if e, ok := l.after(MakeZxid(1, 3), 0); !ok || len(e) != 6 || !l.contains(MakeZxid(1, 4)) {
		t.Fatalf("entries after the kept point: %v %v", e, ok)
	}
	if got := l.afterSnapshot(); len(got) != 3 || got[0].Zxid != MakeZxid(1, 7) {
		t.Fatalf("afterSnapshot = %v", got)
	}
	if _, ok := l.after(MakeZxid(1, 2), 0); ok {
		t.Fatal("after must fail below the kept point")
	}
	l.compact(Snapshot{Index: MakeZxid(1, 8)}, MakeZxid(1, 8))
	if _, ok := l.after(MakeZxid(1, 5), 0); ok || len(l.ents) != 1 || l.last() != MakeZxid(1, 9) {
		t.Fatalf("a compaction without pins drops what was kept: %v", l.ents)
	}
}

// TestPinFollowsReceiver checks the pin's life: set by a snapshot sent,
// kept while the receiver asks from behind it, moved to where it asks from
// once it has it, dropped when it stops asking.
func TestPinFollowsReceiver(t *testing.T) {
	n := &Node{cfg: Config{ElectionTicks: 10, HeartbeatTicks: 2}}
	n.pin(2, MakeZxid(1, 1), MakeZxid(1, 5))
	n.tick = 15
	n.pin(2, MakeZxid(1, 1), MakeZxid(1, 9)) // still receiving the first
	if got := n.keepFor(MakeZxid(1, 12)); got != MakeZxid(1, 5) {
		t.Fatalf("keep = %v, want the first snapshot's index", got)
	}
	if n.pinReceived(2, MakeZxid(1, 4)) {
		t.Fatal("a receiver behind its snapshot has not received it")
	}
	if !n.pinReceived(2, MakeZxid(1, 6)) || n.keepFor(MakeZxid(1, 12)) != MakeZxid(1, 6) {
		t.Fatal("the pin must follow the receiver")
	}
	n.tick += n.pinTicks() + 1
	if got := n.keepFor(MakeZxid(1, 12)); got != MakeZxid(1, 12) || len(n.pins) != 0 {
		t.Fatalf("a receiver that stopped asking keeps %v", got)
	}
}

// TestPinLapsesAfterItsLimit checks that a receiver which stays behind
// its snapshot, asking all along, keeps the log pinLimit election
// timeouts at most.
func TestPinLapsesAfterItsLimit(t *testing.T) {
	n := &Node{cfg: Config{ElectionTicks: 10, HeartbeatTicks: 2}}
	n.pin(2, MakeZxid(1, 1), MakeZxid(1, 5))
	limit := int64(pinLimit * n.cfg.ElectionTicks)
	for n.tick = 2; n.tick <= limit; n.tick += 2 {
		n.pin(2, MakeZxid(1, 1), MakeZxid(1, 9)) // still asking from behind
	}
	if got := n.keepFor(MakeZxid(1, 20)); got != MakeZxid(1, 20) || len(n.pins) != 0 {
		t.Fatalf("after %d ticks the pin still keeps %v", n.tick, got)
	}
}

// TestRemovedCandidateDoesNotFenceLeader: a candidate for leader that the
// configuration leaves out, campaigning with an older history under the
// configuration before (a server removed by entries it never received,
// which coordinates what was its group), gets no promise, asked by itself
// as a coordinator or by a coordinator of that configuration relaying its
// candidacy to a member: the leader keeps its epoch. One whose history is
// newer (it runs under a configuration this server has not received yet)
// is not refused. Regression: forest 9-3-3 swarm seeds 907055 and 907695.
func TestRemovedCandidateDoesNotFenceLeader(t *testing.T) {
	for _, newer := range []bool{false, true} {
		t.Run(fmt.Sprintf("newer=%v", newer), func(t *testing.T) {
			nw, gl := forestWithAWrite(t)
			st := gl.Status()
			current, last := Epoch(0), MakeZxid(0, 0)
			if newer {
				current, last = st.HardState.Current+1, MakeZxid(st.HardState.Current+1, 1)
			}
			const removed = ID(99)
			for _, id := range nw.order {
				n := nw.nodes[id]
				g := n.Status().Group
				if n.Status().Coordinator {
					n.Step(Message{Type: MsgNewGEpoch, From: removed, To: id, Epoch: st.HardState.Promised + 5, Leader: removed,
						Group: g, Members: nw.voters().Groups[g], Current: current, Zxid: last})
					continue
				}
				// Its coordinator under the configuration before, which
				// put this member in its group, relays the candidacy.
				n.Step(Message{Type: MsgPromiseReq, From: removed, To: id, Epoch: st.HardState.Promised + 5, Leader: removed,
					Group: g, GroupEpoch: n.Status().HardState.GroupEpoch, Current: current, Zxid: last})
			}
			nw.settle()
			for _, id := range nw.order {
				hs := nw.nodes[id].Status().HardState
				if fenced := hs.Promised != st.HardState.Promised; fenced != newer {
					t.Fatalf("server %d promised %d (leader's epoch %d) to a candidate with newer=%v history", id, hs.Promised, st.HardState.Promised, newer)
				}
			}
		})
	}
}

// TestPreVoteFromNewerConfigThanCoordinator: a member that still hears
// its coordinator refuses a pre-vote under its own configuration, and
// grants one whose sender runs under a configuration newer than both its
// own and the one its coordinator named (coordinatorOutdated; regression
// of forest 27-3-3 swarm seed 922229, whose members heard a removed
// coordinator for ever).
func TestPreVoteFromNewerConfigThanCoordinator(t *testing.T) {
	nw, gl := forestWithAWrite(t)
	m := apart(nw, gl, false)
	hs := m.Status().HardState
	var sender ID
	for _, id := range nw.voters().Groups[m.group] {
		if id != m.id && id != hs.Coordinator {
			sender = id
		}
	}
	preVote := func(conf Zxid) bool {
		t.Helper()
		m.Step(Message{Type: MsgGroupPreElect, From: sender, To: m.id, Group: m.group, GroupEpoch: hs.GroupEpoch + 1,
			Zxid: conf, Current: hs.Current + 1, Last: MakeZxid(hs.Current+1, 1)})
		rd := m.Ready()
		m.Advance()
		for _, a := range rd.Messages {
			if a.Type == MsgGroupPreElectAck && a.To == sender {
				return !a.Reject
			}
		}
		t.Fatal("no answer to the pre-vote")
		return false
	}
	if m.coordConf.coord != hs.Coordinator || m.coordConf.conf != m.confZxid {
		t.Fatalf("member %d knows its coordinator %d's configuration as %+v, want %v", m.id, hs.Coordinator, m.coordConf, m.confZxid)
	}
	if preVote(m.confZxid) {
		t.Fatalf("member %d, hearing coordinator %d, granted a pre-vote under its own configuration", m.id, hs.Coordinator)
	}
	if !preVote(MakeZxid(hs.Current+1, 1)) {
		t.Fatalf("member %d refused a pre-vote of a configuration newer than its own and its coordinator's", m.id)
	}
}

// TestLateAppendKeepsLeaderWritingToCoordinator: a coordinator refuses a
// late copy of an append from its leader's earlier epoch, naming itself,
// and the leader, which reads a refusal naming no coordinator as "not a
// coordinator", keeps writing to it. Regression: forest 27-3-3 swarm seed
// 925679, whose leader stopped writing to a coordinator over such a copy
// and never sent it the entry that removed it; the removed coordinator
// kept its group, which no probe of the leader reached, for ever.
func TestLateAppendKeepsLeaderWritingToCoordinator(t *testing.T) {
	nw, gl := forestWithAWrite(t)
	c := apart(nw, gl, true)
	hs := c.Status().HardState
	c.Step(Message{Type: MsgAppend, From: gl.id, To: c.id, Epoch: hs.Promised - 1, Leader: gl.id, Group: c.group,
		GroupEpoch: hs.GroupEpoch, Prev: MakeZxid(hs.Promised-1, 1)})
	rd := c.Ready()
	c.Advance()
	var refusal *Message
	for i, m := range rd.Messages {
		if m.Type == MsgGAck && m.To == gl.id {
			refusal = &rd.Messages[i]
		}
	}
	if refusal == nil || !refusal.Reject || refusal.Coord != c.id {
		t.Fatalf("coordinator %d answered a late append with %+v, want a refusal naming itself", c.id, refusal)
	}
	gl.Step(*refusal)
	if got := gl.gl.groups[c.group].gc; got != c.id {
		t.Fatalf("after the refusal the leader writes to %d as group %d's coordinator, want %d", got, c.group, c.id)
	}
}

// TestMemberIgnoresRemovedCoordinatorsNewGroupEpoch: a group append from
// a server the member's configuration leaves out of its group, under a
// group epoch the member has not promised, from an older configuration and
// a history no newer than its own (a removed server elected again by
// others removed with it), leaves the member with the coordinator it
// follows; one whose history or configuration is newer is followed.
// Regression: forest 9-3-3 swarm seed 925583, whose removed servers 1
// and 4, a majority of their old group [1 4 7], elected 4 again and
// again; 7 followed each new group epoch, which fenced the coordinator of
// the configuration in force, the leader, and the leader's epoch changed
// faster than a snapshot reached a lagging member.
func TestMemberIgnoresRemovedCoordinatorsNewGroupEpoch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		newer  func(hs HardState, conf Zxid) (Epoch, Zxid)
		follow bool
	}{
		{"older", func(hs HardState, conf Zxid) (Epoch, Zxid) { return hs.Current - 1, conf }, false},
		{"same history", func(hs HardState, conf Zxid) (Epoch, Zxid) { return hs.Current, conf }, false},
		{"newer history", func(hs HardState, conf Zxid) (Epoch, Zxid) { return hs.Current + 1, conf }, true},
		{"newer configuration", func(hs HardState, conf Zxid) (Epoch, Zxid) { return hs.Current, MakeZxid(hs.Current+1, 1) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nw, gl := forestWithAWrite(t)
			m := apart(nw, gl, false)
			hs := m.Status().HardState
			epoch, conf := tc.newer(hs, m.confZxid)
			const removed = ID(99)
			m.Step(Message{Type: MsgGroupAppend, From: removed, To: m.id, Epoch: epoch, Coord: removed, Group: m.group,
				GroupEpoch: hs.GroupEpoch + 5, Prev: m.log.last(), Zxid: conf})
			got := m.Status().HardState
			if followed := got.Coordinator == removed; followed != tc.follow {
				t.Fatalf("member %d follows %d at group epoch %d (was %d at %d), want following the sender %v",
					m.id, got.Coordinator, got.GroupEpoch, hs.Coordinator, hs.GroupEpoch, tc.follow)
			}
		})
	}
}

// TestRemovedCoordinatorsHelloKeepsGroupsCoordinator: a hello from a
// server the leader's configuration leaves out of the group, under a
// group epoch above its coordinator's, gets the history (which tells it
// of its removal) but does not take the coordinator's place in the
// leader's table while the leader hears that coordinator. Taking it, the
// leader wrote to the removed server and left the group in force unheard
// until its coordinator ran for leader
// (itest.TestRemovedPairDoesNotTakeItsOldGroupBack).
func TestRemovedCoordinatorsHelloKeepsGroupsCoordinator(t *testing.T) {
	nw, gl := forestWithAWrite(t)
	c := apart(nw, gl, true)
	hs := c.Status().HardState
	const removed = ID(99)
	hello := func() {
		gl.Step(Message{Type: MsgGCHello, From: removed, To: gl.id, Epoch: hs.Promised, Group: c.group,
			GroupEpoch: hs.GroupEpoch + 5, Current: hs.Current, Zxid: MakeZxid(hs.Current, 1)})
	}
	hello()
	if got := gl.gl.groups[c.group].gc; got != c.id {
		t.Fatalf("after a hello from removed server %d the leader writes to %d as group %d's coordinator, want %d", removed, got, c.group, c.id)
	}
	defer func() {
		// One the leader has not heard for an election timeout gives
		// way (regression: forest 9-3-3 swarm seed 927301, whose group
		// in force all followed the removed server).
		gl.gl.groups[c.group].heard = gl.tick - int64(gl.cfg.ElectionTicks) - 1
		hello()
		if got := gl.gl.groups[c.group].gc; got != removed {
			t.Fatalf("after a hello from removed server %d the leader writes to %d, unheard for an election timeout, as group %d's coordinator", removed, got, c.group)
		}
	}()
	rd := gl.Ready()
	gl.Advance()
	synced := false
	for _, m := range rd.Messages {
		synced = synced || m.Type == MsgGSync && m.To == removed && m.GroupEpoch == hs.GroupEpoch+5
	}
	if !synced {
		t.Fatalf("the leader sent removed server %d no sync under its group epoch: %+v", removed, rd.Messages)
	}
}

// apart returns a server of nw outside the leader gl's group: its group's
// coordinator, or one of its other members.
func apart(nw *net, gl *Node, coordinator bool) *Node {
	for _, id := range nw.order {
		if n := nw.nodes[id]; n.Status().Coordinator == coordinator && n.Status().Group != gl.Status().Group {
			return n
		}
	}
	return nil
}

// forestWithAWrite returns a 9-server forest (3 groups of 3) that has
// elected a leader, returned too, and committed a write through it.
func forestWithAWrite(t *testing.T) (*net, *Node) {
	t.Helper()
	nw := newNet(t, grid(3, 3), TreeTopology{Fanout: 2})
	nw.tick(40)
	gl := nw.leader()
	if gl == nil {
		t.Fatal("no leader elected")
	}
	if err := gl.Propose([]byte("x")); err != nil {
		t.Fatal(err)
	}
	nw.tick(5)
	return nw, gl
}
