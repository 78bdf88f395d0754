package gpaxos

import "slices"

// This file holds what every server does as an acceptor and learner of its
// group: accept the coordinator's appends in order, adopt synchronizations,
// ask to catch up, and replace a coordinator that fell silent.

// acceptResult says how an acceptor took an append.
type acceptResult int

const (
	acceptOK      acceptResult = iota // in sync; entries appended
	acceptStale                       // from an epoch older than the promise
	acceptCatchup                     // behind: needs missing entries or a sync
)

// accept applies the acceptor rules of one append of epoch e: the log must
// follow e's history (Current == Promised == e) and Prev must not be past the
// last entry (no gaps). Entries already held are skipped; since the log is a
// prefix of e's history, the rest extend it exactly.
func (n *Node) accept(e Epoch, prev Zxid, ents []Entry, commit Zxid) acceptResult {
	switch {
	case e < n.hs.Promised:
		return acceptStale
	case e > n.hs.Promised || n.hs.Current != e || prev > n.log.last():
		return acceptCatchup
	}
	n.appendEntries(ents)
	n.advanceCommit(commit)
	return acceptOK
}

// currentLeader returns the leader of the history this server follows
// (Current), or None when it does not know it. Leader is the server
// promised to, which leads Current only while no newer epoch is promised.
func (n *Node) currentLeader() ID {
	if n.hs.Promised != n.hs.Current {
		return None
	}
	return n.hs.Leader
}

// learnLeader takes the leader of the history this server follows from an
// append of that history that names it, when this server does not know
// it: a history learned from a candidate for leader, which names no
// leader, leaves the server unable to propose until it does, and the
// candidate may lose, so that no new epoch ever names one.
func (n *Node) learnLeader(m Message) {
	if n.hs.Leader == None && m.Leader != None && m.Epoch == n.hs.Promised && m.Epoch == n.hs.Current {
		n.hs.Leader = m.Leader
	}
}

// handleGroupAppend is ga.3.1 and ga.3.3: forward down the tree, accept,
// acknowledge to the coordinator.
func (n *Node) handleGroupAppend(m Message) {
	if m.Group != n.group || m.Coord == None {
		return
	}
	if m.GroupEpoch < n.hs.GroupEpoch {
		n.rejectStaleCoordinator(m.Coord)
		return
	}
	// A group append names its coordinator's configuration (m.Zxid) and
	// history (m.Epoch).
	if m.GroupEpoch > n.hs.GroupEpoch && n.removedCoordinator(m.Coord, m.Zxid, m.Epoch) {
		return
	}
	n.followCoordinator(m.GroupEpoch, m.Coord, n.newerConfig(m.Zxid, m.Epoch))
	n.coordConf = coordConfig{coord: m.Coord, ge: m.GroupEpoch, conf: m.Zxid}
	n.treeDown = m.Down
	if len(m.GCs) > 0 {
		n.gcTable = m.GCs
	}
	for _, c := range n.cfg.Topology.Children(n.members(), m.Coord, m.Down, n.id) {
		f := m
		f.To = c
		n.send(f)
	}
	switch n.accept(m.Epoch, m.Prev, m.Entries, m.Commit) {
	case acceptOK:
		n.learnLeader(m)
		n.ack(m.Coord, n.hs.GroupEpoch)
		if len(m.Entries) == 0 && m.Commit > n.log.last() {
			// A heartbeat whose commit point is past this log: entries
			// relayed earlier never arrived (the heartbeat names only what
			// its sender relayed last, which may be older).
			n.requestCatchup(MsgCatchupReq, m.Coord)
		}
	case acceptCatchup, acceptStale:
		// Stale: this member promised a newer epoch than the leader's; the
		// request carries that epoch to the coordinator (reportNewerEpoch).
		// A relay of another epoch's history asks at once: the member
		// asked during the election, before its coordinator had it.
		n.catchup.forEpoch(m.Epoch)
		n.requestCatchup(MsgCatchupReq, m.Coord)
	}
}

// removedCoordinator reports whether coord, heard under a group epoch
// this member has not promised, is a server its configuration leaves out
// of the group, running under an older configuration (conf, the zxid of
// its entry) with a history no newer than this member's (current): a
// server removed by changes it missed, elected again under the
// configuration before by others that missed them too (two removed
// servers are a majority of their old group of three). Followed, it
// would raise this member's group epoch above the one of the coordinator
// in force, which the member's next acknowledgment then fences; that
// coordinator wins again above it, the removed one again above that, and
// the group's coordinator changes hands for ever, with the leader's
// epoch when the leader coordinates the group. A coordinator whose
// history is newer is followed, whatever its configuration: this member's
// newer one may come from entries that history truncates.
func (n *Node) removedCoordinator(coord ID, conf Zxid, current Epoch) bool {
	return !slices.Contains(n.members(), coord) && !n.newerConfig(conf, current) && current <= n.hs.Current
}

// followCoordinator records that coord coordinates this server's group at ge
// (ge >= the promised group epoch) and that it was just heard; newerConfig
// says the message showed coord running under a newer configuration than
// this server's (Node.newerConfig).
func (n *Node) followCoordinator(ge uint64, coord ID, newerConfig bool) {
	if ge > n.hs.GroupEpoch || n.hs.Coordinator == None {
		n.hs.GroupEpoch, n.hs.Coordinator = ge, coord
	}
	if ge > n.maxGE {
		n.maxGE = ge
	}
	// A coordinator that this server's configuration no longer puts in
	// its group is followed (it may still be relaying the change that
	// removed it) but does not count as heard: if it stays, the group's
	// voters replace it after an election timeout. A removed server that
	// missed its removal otherwise coordinates the group for ever, and no
	// voter of the new configuration ever runs.
	//
	// A coordinator of a newer configuration than this server's does count
	// as heard: this server missed the change that added it. Otherwise
	// this member, and any other of its group that lags the same way,
	// campaigns an election timeout after each election the coordinator
	// wins, before the coordinator's catch-up (a snapshot may take longer
	// than an election timeout) reaches it, and takes the role back under
	// its older configuration, for ever. A removed coordinator that missed
	// its removal runs under an older configuration than the members that
	// removed it, so they still replace it.
	if coord == n.id || slices.Contains(n.members(), coord) || newerConfig {
		n.heardGC, n.heardCoord = n.tick, n.tick
	}
	if coord != n.id {
		n.gcCand = nil
	}
}

// followedCoordinator returns the coordinator this server follows: None
// when that is itself without coordinating (its own candidacy that has not
// won, or a role lost in a restart).
func (n *Node) followedCoordinator() ID {
	if c := n.hs.Coordinator; c != n.id || n.gc != nil {
		return c
	}
	return None
}

// strandedInGroup reports whether no coordinator will bring this server's
// log along, so that it asks a leader, or a candidate for leader, for the
// history instead. Either it never campaigns: its own log (behind) says it
// is not a member (it was added back by a change it has not received), or
// it is a joining server whose log holds nothing yet, and its group may
// have no coordinator (a newcomer alone in its group after removals, or
// beside members that cannot win). Or it follows no coordinator but itself
// (none, a candidacy that has not won, a role lost in a restart) or a
// coordinator it has not heard for an election timeout (one removed by
// entries it misses, or one that lost its state and does not vote), and
// its log may be too old for it ever to win: the entries it misses
// registered the new incarnation of a member that lost its state, removed
// a member that then lost it, or added a member its group's majority now
// needs, so its configuration counts that member's promise for nothing.
func (n *Node) strandedInGroup() bool {
	silent := n.tick-n.heardCoord >= int64(n.cfg.ElectionTicks)
	return !n.mayCampaign() || n.followedCoordinator() == None || silent
}

// catchupFromCandidate asks cand, a candidate for leader whose request for
// promises (m) names a history newer than this log, for that history when
// no coordinator brings this server along (strandedInGroup). With no
// leader left, the candidate's request may be the only message of the
// newer history that reaches the server, and the candidate may need its
// group: a member whose configuration predates a newcomer to its group,
// beside that newcomer whose log is still empty, and a third member that
// lost its state, cannot elect a coordinator at all (the member's
// configuration counts the newcomer for nothing and needs the third, the
// newcomer never campaigns, the third does not vote), and without that
// group no leader is elected to catch them up. With the candidate's
// history, either of them campaigns under the configuration in force.
//
// It is safe: adopting the history is what a member does with any Sync
// (docs/protocol.md §7, Invariant L). The candidate's log, like every
// acceptor's, is a prefix of its Current epoch's history holding that
// epoch's whole initial history; adoptHistory takes it only for an epoch
// at or above this server's promise, and only when it reaches this
// server's commit point. No promise is made to the candidate, no vote is
// counted differently, and no group epoch changes.
func (n *Node) catchupFromCandidate(m Message, cand ID) {
	newer := m.Current > n.hs.Current || m.Current == n.hs.Current && m.Zxid > n.log.last()
	if cand != n.id && newer && m.Current >= n.hs.Promised && n.strandedInGroup() {
		n.requestCatchup(MsgCatchupReq, cand)
	}
}

// requestCatchup asks to (the coordinator, or for a coordinator the leader)
// for what this server misses, as n.catchup paces it.
func (n *Node) requestCatchup(t MsgType, to ID) {
	if to == None || !n.catchup.waited(n.tick, int64(n.cfg.HeartbeatTicks)) {
		return
	}
	n.catchup.asked(n.tick)
	ge := n.hs.GroupEpoch
	if n.gc != nil {
		ge = n.gc.ge
	}
	n.send(Message{Type: t, To: to, Epoch: n.hs.Promised, Group: n.group, GroupEpoch: ge,
		Coord: n.hs.Coordinator, Current: n.hs.Current, Zxid: n.log.last(), Commit: n.hs.Commit})
}

// handleSync is ga.2.2 (NEWGC) and member catch-up: adopt the coordinator's
// history of epoch m.Epoch.
func (n *Node) handleSync(m Message) {
	if m.Group != n.group {
		return
	}
	if m.GroupEpoch < n.hs.GroupEpoch {
		n.rejectStaleCoordinator(m.Coord)
		return
	}
	n.followCoordinator(m.GroupEpoch, m.Coord, false)
	if n.adoptHistory(m) {
		n.ack(m.Coord, n.hs.GroupEpoch)
	}
}

// ack acknowledges to the coordinator coord that the log durably holds
// Current's history up to its last entry (ga.3.1; the Ready delivers it
// only once durable). A server whose votes count for nobody does not
// acknowledge (it counts as down until it is registered again).
func (n *Node) ack(coord ID, ge uint64) {
	if !n.mayVote() {
		return
	}
	// An acknowledgment still queued as the last message to coord says
	// the same of an older point: it now says it of the new one, which is
	// as durable once they leave (every point waits for the same Ready).
	// Appends that carry only a commit point, which arrive during this
	// server's fsync, would otherwise queue one acknowledgment each.
	for i := len(n.msgs) - 1; i >= 0; i-- {
		m := &n.msgs[i]
		if m.To != coord {
			continue
		}
		if m.Type == MsgGroupAck && !m.Reject && m.Epoch == n.hs.Current && m.Group == n.group && m.GroupEpoch == ge {
			m.Zxid = n.log.last()
			return
		}
		break
	}
	n.send(Message{Type: MsgGroupAck, To: coord, Epoch: n.hs.Current, Group: n.group, GroupEpoch: ge, Zxid: n.log.last()})
}

// adoptHistory makes the log follow m.Epoch's history as m describes it: the
// log up to m.Prev (which the sender knows this server holds committed),
// then m.Snapshot's and m.Entries. It refuses when that would be older than
// the promise, or would not reach what this server knows committed.
func (n *Node) adoptHistory(m Message) bool {
	if m.Epoch < n.hs.Promised || m.Epoch < n.hs.Current {
		return false
	}
	base := m.Prev
	if m.Snapshot != nil {
		base = m.Snapshot.Index
	}
	newLast := base
	if len(m.Entries) > 0 {
		newLast = m.Entries[len(m.Entries)-1].Zxid
	}
	if newLast < n.hs.Commit {
		return false // the sender lags behind what is known committed here
	}
	if m.Epoch == n.hs.Current && m.Epoch != 0 {
		// Same history: this log and the sender's are prefixes of it, so
		// nothing here is ever cut off (it may hold acknowledged entries the
		// sender lacks); only a missing suffix is appended.
		if base > n.log.last() && (m.Snapshot == nil || m.Snapshot.Index <= n.applied) {
			return false
		}
		if m.Snapshot != nil && m.Snapshot.Index > n.log.last() {
			n.installSnapshot(*m.Snapshot)
		}
		n.appendEntries(m.Entries)
		if m.Leader != None {
			n.hs.Leader = m.Leader
		}
		n.advanceCommit(m.Commit)
		return true
	}
	if m.Snapshot != nil && m.Snapshot.Index > n.applied {
		n.installSnapshot(*m.Snapshot)
	} else {
		if base > n.log.last() || (base > n.log.snap.Index && !n.log.contains(base)) {
			return false
		}
		n.truncateLog(max(base, n.log.snap.Index))
	}
	n.appendEntries(m.Entries)
	// Only the one candidate that gathered a quorum of promises for an epoch
	// ever sends its history, so a history of the promised epoch from
	// another server than the one promised to comes from the real leader.
	if m.Epoch > n.hs.Promised || m.Leader != None {
		n.hs.Promised, n.hs.Leader = m.Epoch, m.Leader
	}
	n.hs.Current = m.Epoch
	n.advanceCommit(m.Commit)
	return true
}

// tickMember suspects a silent coordinator. The member next after the
// coordinator in the group's cyclic order campaigns first, the one after it
// later, and so on, so that usually exactly one candidate runs.
func (n *Node) tickMember() {
	if !n.mayCampaign() {
		return // a learner, or a joining server still learning: never campaigns
	}
	if n.gcCand != nil {
		if n.tick-n.gcCand.start > int64(n.cfg.ElectionTicks) {
			n.gcCand = nil // lost or stalled; the timer below retries
			n.heardGC = n.tick
		}
		return
	}
	if n.preGC != nil {
		if n.tick-n.preGC.start > int64(n.cfg.ElectionTicks) {
			n.preGC = nil // the group still hears its coordinator, or is out of reach
			n.heardGC = n.tick
		}
		return
	}
	members := n.members()
	coord := n.hs.Coordinator
	d := distance(members, coord, n.id)
	var wait int64
	switch {
	case coord == None && d == 0:
		wait = 1 // the designated first coordinator of a fresh group
	case coord == n.id:
		wait = int64(n.cfg.HeartbeatTicks) // restarted coordinator: reclaim quickly
	default:
		wait = int64(n.cfg.ElectionTicks) + int64(max(d-1, 0))*int64(n.cfg.ElectionTicks/2)
	}
	wait += int64(n.cfg.Rand(n.cfg.HeartbeatTicks))
	if n.tick-n.heardGC > wait {
		n.preCampaignGC()
	}
}

// distance returns how many steps after coord id comes in members' cyclic
// order; coord None counts as the first member.
func distance(members []ID, coord, id ID) int {
	ci, ii := -1, -1
	for i, m := range members {
		if m == coord {
			ci = i
		}
		if m == id {
			ii = i
		}
	}
	if ci < 0 {
		ci = 0
	}
	return (ii - ci + len(members)) % len(members)
}
