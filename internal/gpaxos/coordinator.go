package gpaxos

import (
	"slices"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// This file is the group coordinator (GC): taking the role once elected
// (groupelect.go), relaying the leader's appends down the group's tree,
// aggregating the group's acknowledgments into one ACK-G, gathering the
// group's promises for a leader candidate, and catching up members.

// coordinator is the state of a server that coordinates its group.
type coordinator struct {
	ge       uint64
	acked    map[ID]Zxid // per member: durably holds Current's history up to
	ackInc   map[ID]uint64
	ackEpoch Epoch // the epoch acked refers to
	heard    map[ID]int64
	reported Zxid // group index last reported to the leader
	down     []ID
	lastSent int64 // tick of the last message down the tree
	// relayed is the last zxid sent down the tree. Heartbeats carry it,
	// not the log's last zxid: the log may hold entries not yet relayed
	// (the leader, which is also a coordinator, appends before it
	// relays), and a heartbeat naming entries the members have not been
	// sent looks to them like a gap and sends all of them to catch-up.
	relayed Zxid
	// electedUnder is the hash of the configuration under which the group
	// chose this coordinator (for checkers: majorities of one
	// configuration meet, so one group epoch has one coordinator per
	// configuration it was won under).
	electedUnder uint64
	heardGL      int64
	leaderTo     ID    // the leader this coordinator reports to
	leaderEpoch  Epoch // the epoch leaderTo leads
	round        *promiseRound
	hello        pacer // hellos to the leader
}

// promiseRound gathers a majority of the group's promises for a GL
// candidate's epoch (the member half of gc.1.2).
type promiseRound struct {
	epoch    Epoch
	cand     ID
	promises map[ID]Message
	done     bool
	ack      Message
	// members are the group's members in the candidate's configuration
	// (NewGEpoch's Members), asked for promises too.
	members []ID
}

// becomeCoordinator finishes group recovery: the new coordinator now knows
// the newest leader its group promised to and introduces itself to it (or,
// when that leader is gone, runs for leader itself). Until the leader has
// synchronized it, it relays nothing, so it serves no vote before recovery.
func (n *Node) becomeCoordinator(c *gcCandidate) {
	if n.hs.GroupEpoch != c.ge || n.hs.Coordinator != n.id {
		return
	}
	gc := &coordinator{ge: c.ge, acked: map[ID]Zxid{}, ackInc: map[ID]uint64{}, heard: map[ID]int64{}, heardGL: n.tick, lastSent: n.tick,
		relayed: n.log.last(), electedUnder: n.confHash}
	for _, id := range n.members() {
		gc.heard[id] = n.tick
	}
	// The newest leader any promiser knows of.
	best := Message{Epoch: n.hs.Promised, Leader: n.hs.Leader}
	var ids []ID
	for id := range c.acks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := c.acks[id]
		if a.Epoch > best.Epoch {
			best = a
		}
		if len(n.gcTable) == 0 && len(a.GCs) > 0 {
			n.gcTable = a.GCs
		}
	}
	if p := n.pendingCand; p != nil && p.Epoch > best.Epoch {
		best = Message{Epoch: p.Epoch, Leader: candidateOf(*p)}
	}
	n.gc = gc
	n.heardGC = n.tick
	gc.leaderTo, gc.leaderEpoch = best.Leader, best.Epoch
	n.sendGroupHeartbeat()
	if p := n.pendingCand; p != nil && p.Epoch > n.hs.Promised {
		n.pendingCand = nil
		n.handleNewGEpoch(*p)
	}
	// Run for leader at once when there is none, when this server was it,
	// or when the leader was the coordinator the group just replaced for
	// being silent (so it is very likely down): waiting another election
	// timeout for it would only lengthen the failover.
	if gc.leaderTo == None || gc.leaderTo == n.id && n.gl == nil || gc.leaderTo == c.replaced && c.replaced != None {
		n.campaignGL()
		return
	}
	n.sendHello()
}

// sendHello introduces the coordinator to its leader and asks for what it
// misses (the GC half of catch-up).
func (n *Node) sendHello() {
	gc := n.gc
	if n.hs.Leader != None && n.hs.Promised > gc.leaderEpoch {
		gc.leaderTo, gc.leaderEpoch = n.hs.Leader, n.hs.Promised
	}
	if gc.leaderTo == None {
		return
	}
	gc.hello.asked(n.tick)
	n.send(Message{Type: MsgGCHello, To: gc.leaderTo, Epoch: n.hs.Promised, Group: n.group, GroupEpoch: gc.ge,
		Current: n.hs.Current, Zxid: n.log.last(), Commit: n.hs.Commit})
}

// handleAppend is gc.3.1: accept the leader's entries, relay them down the
// group's tree, acknowledge to itself as a member.
func (n *Node) handleAppend(m Message) {
	gc := n.gc
	if m.Group != n.group {
		return
	}
	if gc == nil {
		// The leader's table is out of date: point it at the coordinator
		// this server follows — never at itself: a promise to itself is a
		// candidacy that did not win, and naming it would keep the leader
		// writing to a server that ignores it.
		coord := n.followedCoordinator()
		if n.strandedInGroup() && m.Epoch >= n.hs.Promised && (m.Prev > n.log.last() || n.hs.Current != m.Epoch) {
			// A leader whose history this log lacks writes to this server,
			// and no coordinator will bring it along, so it asks the
			// leader itself. The leader's history carries the
			// configuration in force.
			n.requestCatchup(MsgCatchupReq, m.From)
		}
		n.send(Message{Type: MsgGAck, To: m.From, Epoch: m.Epoch, Group: n.group, GroupEpoch: n.hs.GroupEpoch,
			Coord: coord, Reject: true})
		return
	}
	if m.Epoch < n.hs.Promised {
		// Coord names this server: the append may be a late copy from
		// an earlier epoch of the leader that this server now serves,
		// and a refusal naming no coordinator would make that leader
		// stop writing to it (handleGAck).
		n.send(Message{Type: MsgGAck, To: m.From, Epoch: n.hs.Promised, Group: n.group, GroupEpoch: gc.ge, Coord: n.id, Reject: true})
		return
	}
	if m.GroupEpoch > gc.ge {
		// The leader follows a newer coordinator of this group.
		n.gc = nil
		return
	}
	gc.heardGL, gc.leaderTo, gc.leaderEpoch = n.tick, m.From, m.Epoch
	if len(m.GCs) > 0 {
		n.gcTable = m.GCs
	}
	switch n.accept(m.Epoch, m.Prev, m.Entries, m.Commit) {
	case acceptOK:
		n.learnLeader(m)
		n.relay(m.Prev, m.Entries)
		n.ack(n.id, gc.ge)
		if len(m.Entries) == 0 && n.groupAlive() {
			// A heartbeat: answer so the leader knows this group is alive
			// (only while it is: a coordinator cut off from its members
			// must not make their group count as heard, or a leader cut
			// off with it would never step down).
			n.sendGAck(Message{Type: MsgGAck, To: m.From, Epoch: n.hs.Current, Group: n.group, GroupEpoch: gc.ge, Zxid: gc.reported, Conf: n.confHash})
		}
	case acceptCatchup:
		// The first append of a leader's epoch asks at once: a hello
		// sent while that leader was still a candidate went unanswered
		// (handleGCHello).
		gc.hello.forEpoch(m.Epoch)
		if gc.hello.waited(n.tick, int64(n.cfg.HeartbeatTicks)) {
			n.sendHello()
		}
	}
}

// handleGSync is gc.2.1: adopt the leader's history, then bring the group
// along.
func (n *Node) handleGSync(m Message) {
	gc := n.gc
	if gc == nil || m.Group != n.group || m.GroupEpoch > gc.ge {
		return
	}
	gc.heardGL, gc.leaderTo, gc.leaderEpoch = n.tick, m.From, m.Epoch
	if len(m.GCs) > 0 {
		n.gcTable = m.GCs
	}
	if !n.adoptHistory(m) {
		return
	}
	n.relay(n.log.last(), nil)
	n.ack(n.id, gc.ge)
}

// relay sends entries after prev down the group's tree with the commit
// point: gc.3.1 with gc.3.3's COMMIT-G piggybacked.
func (n *Node) relay(prev Zxid, ents []Entry) {
	gc := n.gc
	gc.lastSent = n.tick
	gc.relayed = prev
	if len(ents) > 0 {
		gc.relayed = ents[len(ents)-1].Zxid
	}
	for _, c := range n.cfg.Topology.Children(n.members(), n.id, gc.down, n.id) {
		n.send(Message{Type: MsgGroupAppend, To: c, Epoch: n.hs.Current, Leader: n.currentLeader(), Coord: n.id,
			Group: n.group, GroupEpoch: gc.ge, Prev: prev, Entries: ents, Commit: n.hs.Commit,
			Down: gc.down, GCs: n.gcTable, Zxid: n.confZxid})
	}
}

// sendGroupHeartbeat tells the group its coordinator is alive, and carries
// the commit point.
func (n *Node) sendGroupHeartbeat() { n.relay(min(n.gc.relayed, n.log.last()), nil) }

// handleGroupAck is gc.3.2: count the members' durable acceptances and
// report the group's majority point to the leader when it advances.
func (n *Node) handleGroupAck(m Message) {
	gc := n.gc
	if gc == nil || m.Group != n.group {
		return
	}
	if m.Reject {
		if m.GroupEpoch > n.maxGE {
			n.maxGE = m.GroupEpoch
		}
		if m.GroupEpoch > gc.ge {
			n.gc = nil
		}
		return
	}
	if m.GroupEpoch != gc.ge {
		return
	}
	gc.heard[m.From] = n.tick
	if m.Epoch != n.hs.Current || n.hs.Current != n.hs.Promised {
		return
	}
	if gc.ackEpoch != n.hs.Current {
		gc.ackEpoch, gc.acked, gc.ackInc, gc.reported = n.hs.Current, map[ID]Zxid{}, map[ID]uint64{}, 0
	}
	if gc.ackInc[m.From] != m.Inc {
		// Another incarnation: what the old one acknowledged is not known
		// to be held any more.
		gc.acked[m.From], gc.ackInc[m.From] = 0, m.Inc
	}
	if m.Zxid > gc.acked[m.From] {
		gc.acked[m.From] = m.Zxid
	}
	idx := Zxid(n.voters.GroupIndex(n.group, func(id ID) uint64 {
		if !n.counts(id, gc.ackInc[id]) {
			return 0
		}
		return uint64(gc.acked[id])
	}))
	if idx > gc.reported {
		gc.reported = idx
		n.sendGAck(Message{Type: MsgGAck, To: gc.leaderTo, Epoch: n.hs.Current, Group: n.group, GroupEpoch: gc.ge, Zxid: idx, Conf: n.confHash})
	}
}

// sendGAck sends m, a group's majority point, to the leader; a leader
// that coordinates the group takes it at once, as it takes its own
// appends (broadcastAppend). The point counts this server only through
// its own acknowledgment, which waits for its fsync, so a leader whose
// fsync is still running commits on its members' acknowledgments alone.
func (n *Node) sendGAck(m Message) {
	if m.To == n.id && n.gl != nil {
		m.From, m.Inc = n.id, n.inc
		n.handleGAck(m)
		return
	}
	n.send(m)
}

// handleCatchupReq answers a member that is behind with a synchronization
// from its last entry (when it follows the same history) or from its commit
// point, or with a snapshot when the log no longer reaches back that far.
func (n *Node) handleCatchupReq(m Message) {
	gc := n.gc
	if (n.gl != nil || n.glCand != nil) && (gc == nil || m.Group != n.group) {
		n.leaderCatchup(m)
		return
	}
	if gc == nil || m.Group != n.group || m.GroupEpoch > gc.ge {
		return
	}
	gc.heard[m.From] = n.tick
	if m.Epoch > n.hs.Promised {
		// The member promised an epoch whose candidate has not (yet) won
		// here; it will accept nothing older. Let the leader know a newer
		// epoch is out there: it steps down and a new election, with an
		// epoch above every one seen, takes the member back in.
		n.reportNewerEpoch(m.Epoch)
		return
	}
	if n.hs.Current != n.hs.Promised {
		return
	}
	s, ok := n.syncFor(m)
	if !ok {
		return
	}
	s.Type, s.To, s.Coord, s.Group, s.GroupEpoch = MsgSync, m.From, n.id, n.group, gc.ge
	n.send(s)
}

// leaderCatchup answers a catch-up request made to the leader, or to a
// candidate for leader, by a server that is not in its coordinator's reach
// (handleAppend, catchupFromCandidate). The Sync names the server's own
// group epoch and coordinator, so that adopting it changes nothing in the
// group.
func (n *Node) leaderCatchup(m Message) {
	if m.Epoch > n.hs.Promised || m.Group < 0 || m.Group >= len(n.voters.Groups) {
		return
	}
	s, ok := n.syncFor(m)
	if !ok {
		return
	}
	if n.gl == nil {
		// A candidate that promised itself a newer epoch than the history
		// it sends names no leader of that history.
		s.Leader = n.currentLeader()
	}
	s.Type, s.To, s.Coord, s.Group, s.GroupEpoch = MsgSync, m.From, m.Coord, m.Group, m.GroupEpoch
	n.send(s)
}

// syncFor builds the history a server described by m (its Current, last zxid
// and commit point) needs to follow this server's Current history.
func (n *Node) syncFor(m Message) (Message, bool) {
	base := m.Commit
	if m.Current == n.hs.Current && n.log.contains(m.Zxid) {
		base = m.Zxid // same history: only the missing suffix
	}
	if base > n.log.last() {
		return Message{}, false
	}
	s := Message{Epoch: n.hs.Current, Leader: n.hs.Leader, Prev: base, Commit: n.hs.Commit}
	// The whole suffix, never a part of it: the receiver starts following
	// Current's history with it, and a member that followed an epoch with
	// only a prefix of that epoch's initial history could be picked as the
	// holder of the best history by a later candidate while lacking
	// committed entries (sim/regress_test.go replays the case). A long
	// suffix is replaced by the snapshot and the entries after it, which
	// the compaction interval bounds.
	// The receiver truncates after base, so base must be a point both logs
	// share: a zxid names one entry, so the sender must hold it. A commit
	// point the sender's history does not contain (a receiver that came
	// back with another history than it acknowledged) gets the snapshot.
	// A server that has received the snapshot pinned for it gets the
	// entries after it however many: the next snapshot would be as stale
	// by the time it arrived.
	ents, ok := n.log.after(base, 0)
	received := n.pinReceived(m.From, base)
	if !ok || !n.log.contains(base) || len(ents) > 8*n.cfg.MaxBatch && n.log.snap.Index > base && !received {
		snap := n.log.snap
		s.Snapshot = &snap
		ents = n.log.afterSnapshot()
		n.pin(m.From, base, snap.Index)
	}
	s.Entries = ents
	return s, true
}

// groupAlive reports whether the coordinator has heard a majority of its
// group (itself included) within an election timeout.
func (n *Node) groupAlive() bool {
	return n.tick-n.groupHeard() <= int64(n.cfg.ElectionTicks)
}

// groupHeard returns the last tick at which the coordinator had heard a
// majority of its group (itself included, always heard): the majority-th
// most recent of its members' last messages.
func (n *Node) groupHeard() int64 {
	gc := n.gc
	return int64(n.voters.GroupIndex(n.group, func(id ID) uint64 {
		if id == n.id {
			return uint64(n.tick)
		}
		return uint64(max(gc.heard[id], 0))
	}))
}

// tickCoordinator keeps the group alive: heartbeats down the tree, a down
// list of silent members to route around, and suspicion of a silent leader.
func (n *Node) tickCoordinator() {
	gc := n.gc
	hb, el := int64(n.cfg.HeartbeatTicks), int64(n.cfg.ElectionTicks)
	var down []ID
	for _, id := range n.members() {
		if id != n.id && n.tick-gc.heard[id] > el {
			down = append(down, id)
		}
	}
	gc.down = down
	if n.tick-gc.lastSent >= hb {
		n.sendGroupHeartbeat()
	}
	if n.gl != nil || n.glCand != nil {
		gc.heardGL = n.tick
		return
	}
	if n.hs.Current != n.hs.Promised && n.tick-gc.hello.last >= hb {
		n.sendHello() // still waiting for the leader's synchronization
	}
	// Coordinators run one after another, a heartbeat apart: the first
	// candidate's request reaches the others well within that, and relaying
	// it restarts their timers (handleNewGEpoch). The leader's own group
	// goes first (its new coordinator campaigns as soon as it is elected),
	// then the groups after it in order. When the leader's group cannot
	// elect a coordinator without it (it was alone there, or one of two:
	// the survivor is no majority), nobody there can replace it, so the
	// next group goes first: without that, small forests lost a heartbeat
	// or two of every failover to waiting (3 servers in 3 groups; 5
	// servers, whose groups have 2, 2 and 1 members: 271 to 317 ms of
	// write gap after a leader kill, against 218 to 245 at 3 servers).
	t := int64(len(n.voters.Groups))
	rank := int64(n.group)
	if lg := n.voters.GroupOf(gc.leaderTo); lg >= 0 && lg != n.group {
		rank = (int64(n.group) - int64(lg) - 1 + t) % t
		if size := len(n.voters.Groups[lg]); size-1 >= size/2+1 {
			rank++
		}
	}
	wait := el + rank*hb + int64(n.cfg.Rand(n.cfg.HeartbeatTicks))
	if n.tick-gc.heardGL > wait {
		if n.mayCampaign() && n.groupAlive() {
			// Only with its group: a coordinator cut off from it and from
			// the leader would only raise its own promise, and unseat the
			// leader when it comes back.
			n.campaignGL()
		} else if !n.voting() {
			// A coordinator its newest configuration removes keeps its
			// role while a leader is there to commit the change through
			// it; with none, it can neither run for leader nor step
			// aside by itself, and its heartbeats would keep the group
			// from choosing a coordinator that can: no leader, ever. It
			// stops coordinating; the group's voters elect one of their
			// own.
			n.gc, n.glCand = nil, nil
			n.heardGC = n.tick
		}
	}
}

// removedCandidate reports whether a candidate for leader is a server
// removed by entries it never received, campaigning under the
// configuration before: this server's configuration leaves it out and its
// history (current, then last zxid) is older than this server's. A
// candidate of a newer configuration holds the entry that made it, which
// this server lacks, so its history is newer. Coordinators and members
// refuse it: promising would fence the leader of the configuration in
// force at each of its campaigns, for as long as it runs, for a candidate
// that cannot take the ensemble anywhere it has not been.
func (n *Node) removedCandidate(cand ID, current Epoch, last Zxid) bool {
	return n.voters.GroupOf(cand) < 0 && !n.upToDate(current, last)
}

// candidateOf returns the candidate a NewGEpoch is from: its Leader field
// (a member may have forwarded it to its coordinator), or its sender.
func candidateOf(m Message) ID {
	if m.Leader != None {
		return m.Leader
	}
	return m.From
}

// handleNewGEpoch is the GC half of gl.1.1/gc.1.2: relay a candidate's new
// epoch to the group and gather a majority of promises.
func (n *Node) handleNewGEpoch(m Message) {
	cand := candidateOf(m)
	if n.voters.GroupOf(cand) < 0 && len(m.Members) == 0 {
		// A candidate that does not vote here and names no configuration
		// of its own that it would count under: a removed server.
		return
	}
	if n.removedCandidate(cand, m.Current, m.Zxid) {
		n.send(Message{Type: MsgGEpochAck, To: cand, Epoch: m.Epoch, Group: n.group, Reject: true})
		return
	}
	if m.Epoch <= n.hs.Promised && !(m.Epoch == n.hs.Promised && n.hs.Leader == cand) {
		n.send(Message{Type: MsgGEpochAck, To: cand, Epoch: n.hs.Promised, Group: n.group, Reject: true})
		return
	}
	gc := n.gc
	if gc == nil {
		// Not a coordinator (yet): remember it, in case this server becomes one.
		if n.pendingCand == nil || m.Epoch > n.pendingCand.Epoch {
			c := m
			n.pendingCand = &c
		}
		n.catchupFromCandidate(m, cand)
		// And pass it to the coordinator this server follows, once (a
		// forwarded request's sender is not its candidate): the candidate
		// may not know that coordinator, when its configuration and this
		// group's differ (after a change to the leader's rank, members
		// following a removed coordinator of an older configuration never
		// heard of the candidate, whose configuration could not win
		// without them).
		if m.From == cand && n.hs.Coordinator != None && n.hs.Coordinator != n.id && n.hs.Coordinator != cand {
			f := m
			f.To, f.Leader = n.hs.Coordinator, cand
			n.send(f)
		}
		return
	}
	if r := gc.round; r != nil && r.epoch == m.Epoch {
		if r.cand != cand {
			// Another candidate of the same epoch: its round is the one
			// running (a coordinator that is not a member of its group
			// any more never promises, so its own promise does not
			// reject the second candidate above).
			n.send(Message{Type: MsgGEpochAck, To: cand, Epoch: m.Epoch, Group: n.group, Reject: true})
			return
		}
		r.addMembers(m.Members)
		if r.done {
			n.send(r.ack)
		}
		return
	}
	r := &promiseRound{epoch: m.Epoch, cand: cand, promises: map[ID]Message{}}
	r.addMembers(m.Members)
	gc.round = r
	gc.heardGL = n.tick // a candidate is running: give it an election timeout
	// The group's members, and those the candidate's configuration puts
	// in it: promises are counted by the candidate under its own
	// configuration, whoever relays them.
	to := slices.Clone(n.members())
	for _, id := range r.members {
		if !slices.Contains(to, id) {
			to = append(to, id)
		}
	}
	for _, id := range to {
		n.send(Message{Type: MsgPromiseReq, To: id, Epoch: m.Epoch, Leader: cand, Group: n.group, GroupEpoch: gc.ge,
			Current: m.Current, Zxid: m.Zxid})
	}
}

// addMembers records the members the candidate counts in this group.
func (r *promiseRound) addMembers(ids []ID) {
	for _, id := range ids {
		if !slices.Contains(r.members, id) {
			r.members = append(r.members, id)
		}
	}
}

// candidateMajority reports whether the promises include a majority of
// the members the candidate named.
func (r *promiseRound) candidateMajority() bool {
	if len(r.members) == 0 {
		return false
	}
	k := 0
	for _, id := range r.members {
		if _, ok := r.promises[id]; ok {
			k++
		}
	}
	return k >= quorum.Majority(len(r.members))
}

// handlePromiseReq is the acceptor's promise: never again accept anything of
// an older epoch. The promise leaves only once durable.
func (n *Node) handlePromiseReq(m Message) {
	if m.Group != n.group {
		return
	}
	if m.GroupEpoch < n.hs.GroupEpoch {
		n.rejectStaleCoordinator(m.From)
		return
	}
	if !n.mayVote() {
		return // counts as down: its promise would count for nobody
	}
	if m.Epoch > n.hs.Promised && n.removedCandidate(m.Leader, m.Current, m.Zxid) {
		// Relayed by a coordinator of the configuration before, which
		// put this member in the removed servers' group.
		n.send(Message{Type: MsgPromise, To: m.From, Epoch: n.hs.Promised, Group: n.group, GroupEpoch: m.GroupEpoch, Reject: true})
		return
	}
	if m.Epoch > n.hs.Promised {
		n.hs.Promised, n.hs.Leader = m.Epoch, m.Leader
	}
	if m.Epoch == n.hs.Promised && n.hs.Leader == m.Leader {
		n.send(Message{Type: MsgPromise, To: m.From, Epoch: m.Epoch, Leader: m.Leader, Group: n.group, GroupEpoch: m.GroupEpoch,
			Current: n.hs.Current, Zxid: n.log.last()})
		return
	}
	n.send(Message{Type: MsgPromise, To: m.From, Epoch: n.hs.Promised, Group: n.group, GroupEpoch: m.GroupEpoch, Reject: true})
}

// handlePromise counts a member's promise; on a majority the coordinator
// reports the group's best history to the candidate (gc.1.2's ACK-E).
func (n *Node) handlePromise(m Message) {
	gc := n.gc
	if gc == nil || gc.round == nil {
		return
	}
	r := gc.round
	if m.Reject {
		if m.Epoch > r.epoch && !r.done {
			r.done = true
			r.ack = Message{Type: MsgGEpochAck, To: r.cand, Epoch: m.Epoch, Group: n.group, Reject: true}
			n.send(r.ack)
		}
		return
	}
	// A promise names its candidate: two candidates can run for one epoch,
	// and a promise to the one whose round this coordinator ran before
	// must not count for the other (a removed coordinator that switched
	// rounds would give the late promises of the first candidate to the
	// second, and both would lead the same epoch).
	if m.Epoch != r.epoch || m.GroupEpoch != gc.ge || m.Leader != r.cand {
		return
	}
	if _, dup := r.promises[m.From]; dup || (r.done && r.ack.Reject) {
		return
	}
	// Promises keep counting after the first report: the candidate counts
	// the promisers under its own configuration, which may need more of
	// them than this coordinator's does.
	r.promises[m.From] = m
	counted := func(id ID) bool { p, ok := r.promises[id]; return ok && n.counts(id, p.Inc) }
	if !n.voters.GroupMajority(n.group, counted) && !r.candidateMajority() {
		return
	}
	var best Message
	first := true
	for _, id := range sortedKeys(r.promises) {
		p := r.promises[id]
		if first || p.Current > best.Current || p.Current == best.Current && p.Zxid > best.Zxid {
			best, first = p, false
		}
	}
	promisers := make([]ID, 0, len(r.promises))
	for id := range r.promises {
		promisers = append(promisers, id)
	}
	slices.Sort(promisers)
	r.done = true
	r.ack = Message{Type: MsgGEpochAck, To: r.cand, Epoch: r.epoch, Group: n.group, GroupEpoch: gc.ge,
		Current: best.Current, Zxid: best.Zxid, Holder: best.From, Promisers: promisers,
		PromiserIncs: promiserIncs(promisers, r.promises)}
	n.send(r.ack)
}

// groupsHeard reports whether the groups satisfying ok weigh a quorum.
func groupsHeard(v quorum.Config, ok func(g int) bool) bool { return v.GroupsQuorum(ok) }

// rejectStaleCoordinator tells a server that acted as this group's
// coordinator under an old group epoch that a newer one exists, so that it
// steps down instead of waiting for members that ignore it.
func (n *Node) rejectStaleCoordinator(to ID) {
	n.send(Message{Type: MsgGroupAck, To: to, Group: n.group, GroupEpoch: n.hs.GroupEpoch, Reject: true})
}

// reportNewerEpoch hands the news of epoch e, newer than this server's
// leader's, to that leader (or acts on it, when this server leads).
func (n *Node) reportNewerEpoch(e Epoch) {
	if n.gl != nil {
		n.gl = nil
		n.campaignGL()
		return
	}
	if n.gc != nil && n.gc.leaderTo != None && n.tick-n.gc.hello.last >= int64(n.cfg.HeartbeatTicks) {
		n.gc.hello.asked(n.tick)
		// Coord names this server: it is the coordinator (a leader that
		// reads Coord None from the server it writes to as "not a
		// coordinator" would otherwise stop writing to it).
		n.send(Message{Type: MsgGAck, To: n.gc.leaderTo, Epoch: e, Group: n.group, GroupEpoch: n.gc.ge, Coord: n.id, Reject: true})
	}
}

// sortedKeys returns m's keys in increasing order, for deterministic
// iteration.
func sortedKeys[V any](m map[ID]V) []ID {
	ids := make([]ID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
