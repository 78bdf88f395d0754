package gpaxos

import "slices"

// This file is the global leader (GL): election among the coordinators
// (discovery), synchronization of the chosen history, and the broadcast
// phase (ordering, pipelining, counting group acknowledgments by weight).

// leader is the state of the server that leads epoch `epoch`.
type leader struct {
	epoch      Epoch
	counter    uint32
	groups     []glGroup // per group: its coordinator as this leader knows it
	pending    []Entry   // proposals waiting for the next flush
	lastBeat   int64
	sentCommit Zxid
	since      int64 // tick at which leadership began
	lastProbe  int64 // tick of the last probe for unknown coordinators
	// registrations are the servers' requests to register their
	// incarnations, not yet ordered (incarnation.go).
	registrations map[ID]Message
}

// glGroup is the leader's view of one group.
type glGroup struct {
	gc    ID
	ge    uint64
	acked Zxid // the group's majority point in this epoch
	heard int64
}

// glCandidate is a coordinator running for global leader.
type glCandidate struct {
	epoch    Epoch
	start    int64
	acks     map[int]Message // per group, the GEpochAck
	fetching bool
	best     Message
	retries  int
	// adopted is the holder whose history the candidate adopted last (None:
	// its own). Adopting a history can change the configuration, under
	// which the promises are counted again and the best history chosen
	// again, until the choice is stable.
	adopted ID
}

// groupPromised reports whether group g's promisers form a majority of g
// under the candidate's configuration.
func (n *Node) groupPromised(c *glCandidate, g int) bool {
	a, ok := c.acks[g]
	return ok && n.voters.GroupMajority(g, func(id ID) bool { return n.promisedBy(a, id) })
}

// campaignGL starts discovery (gl.1.1): ask every known coordinator to
// gather its group's promises for a new epoch.
func (n *Node) campaignGL() {
	e := max(n.hs.Promised, n.maxEpoch) + 1
	n.maxEpoch = e
	n.glCand = &glCandidate{epoch: e, start: n.tick, acks: map[int]Message{}}
	if n.gc != nil {
		n.gc.heardGL = n.tick
	}
	n.sendNewGEpoch()
}

// sendNewGEpoch (re)sends the candidate's epoch to the coordinator of every
// group that has not answered; on retries also to the members that would
// succeed a coordinator that may be gone. It names the candidate's history
// (Current, last zxid), so that a member no coordinator brings along can
// ask for it (catchupFromCandidate).
func (n *Node) sendNewGEpoch() {
	c := n.glCand
	for g, members := range n.voters.Groups {
		if n.groupPromised(c, g) || len(members) == 0 {
			continue
		}
		var to []ID
		if g == n.group && n.gc != nil {
			to = append(to, n.id)
		} else {
			coord := None
			if g < len(n.gcTable) {
				coord = n.gcTable[g]
			}
			if coord != None {
				to = append(to, coord)
			}
			start := slices.Index(members, coord)
			for k := 1; k <= min(c.retries, len(members)); k++ {
				to = append(to, members[(start+k+len(members))%len(members)])
			}
		}
		for _, id := range to {
			n.send(Message{Type: MsgNewGEpoch, To: id, Epoch: c.epoch, Leader: n.id, Group: g, Members: members,
				Current: n.hs.Current, Zxid: n.log.last()})
		}
	}
	c.retries++
}

// fetchTicks is how long, in election timeouts, a candidacy may wait for
// the best history from a holder it still hears: a snapshot of gigabytes
// takes seconds to arrive, longer than a candidacy otherwise lasts, and a
// candidacy given up asks again under a new epoch, whose answer takes as
// long.
const fetchTicks = 40

// tickGLCandidate retransmits and gives up a stalled candidacy: after two
// election timeouts, or fetchTicks while it fetches from a holder of its
// own group that it heard within an election timeout.
func (n *Node) tickGLCandidate() {
	c := n.glCand
	limit := 2 * int64(n.cfg.ElectionTicks)
	if c.fetching && n.gc != nil && c.best.Holder != n.id && n.tick-n.gc.heard[c.best.Holder] <= int64(n.cfg.ElectionTicks) {
		limit = fetchTicks * int64(n.cfg.ElectionTicks)
	}
	if n.tick-c.start > limit {
		n.glCand = nil // the coordinator's silence timer will run again
		return
	}
	if (n.tick-c.start)%int64(n.cfg.HeartbeatTicks) == 0 {
		if c.fetching {
			n.sendFetch()
		} else {
			n.sendNewGEpoch()
		}
	}
}

// handleGEpochAck is gl.1.2: once groups of quorum weight have promised,
// pick the newest history among them and fetch it.
func (n *Node) handleGEpochAck(m Message) {
	c := n.glCand
	if c != nil && m.Reject && m.Epoch > c.epoch {
		n.glCand = nil
		return
	}
	if c == nil || m.Epoch != c.epoch || m.Reject {
		return
	}
	if prev, ok := c.acks[m.Group]; ok && (prev.GroupEpoch > m.GroupEpoch || len(prev.Promisers) > len(m.Promisers)) {
		return
	}
	if m.Group < 0 || m.Group >= len(n.voters.Groups) {
		return
	}
	c.acks[m.Group] = m
	if !c.fetching {
		n.chooseHistory()
	}
}

// chooseHistory continues a candidacy whose promises may now weigh a
// quorum: it picks the newest history among them, fetches it unless the
// candidate holds it, and leads once the promises weigh a quorum under the
// configuration of the history it holds.
func (n *Node) chooseHistory() {
	c := n.glCand
	if !n.voters.GroupsQuorum(func(g int) bool { return n.groupPromised(c, g) }) {
		return
	}
	// Newest history: highest (Current, last zxid); ties, which mean equal
	// histories, go to the lowest group for determinism.
	first := true
	for g := range n.voters.Groups {
		a, ok := c.acks[g]
		if !ok {
			continue
		}
		if first || a.Current > c.best.Current || a.Current == c.best.Current && a.Zxid > c.best.Zxid {
			c.best, first = a, false
		}
	}
	// A history is named by its Current epoch and last zxid: a candidate
	// whose own log is the best history, whoever reported it, holds it.
	own := n.hs.Current == c.best.Current && n.log.last() == c.best.Zxid
	if own || c.best.Holder == n.id && c.adopted == None || c.best.Holder == c.adopted {
		n.becomeLeader()
		return
	}
	c.fetching = true
	n.sendFetch()
}

// sendFetch asks the holder of the best history for it, describing the
// candidate's own log (Current, last zxid, commit point) so that the
// holder sends only the suffix it lacks when it follows the same history,
// not a snapshot that can take longer to arrive than the candidacy lasts.
func (n *Node) sendFetch() {
	c := n.glCand
	n.send(Message{Type: MsgFetch, To: c.best.Holder, Epoch: c.epoch, Commit: n.hs.Commit, Current: n.hs.Current, Zxid: n.log.last()})
}

// handleFetch sends this server's history to a candidate it promised to.
func (n *Node) handleFetch(m Message) {
	if m.Epoch != n.hs.Promised || m.From != n.hs.Leader {
		if n.hs.Promised > m.Epoch {
			// The candidacy is lost: say so, so it ends now.
			n.send(Message{Type: MsgGEpochAck, To: m.From, Epoch: n.hs.Promised, Reject: true})
		}
		return
	}
	s, ok := n.syncFor(m)
	if !ok {
		return
	}
	s.Type, s.To, s.Epoch, s.Current = MsgFetchResp, m.From, m.Epoch, n.hs.Current
	n.send(s)
}

// handleFetchResp adopts the newest history as the candidate's own, then
// leads.
func (n *Node) handleFetchResp(m Message) {
	c := n.glCand
	if c == nil || !c.fetching || m.Epoch != c.epoch || m.From != c.best.Holder {
		return
	}
	// Adopt under the holder's Current epoch: the log is then a prefix of
	// that epoch's history, as the invariant requires.
	h := m
	h.Epoch = m.Current
	conf := n.confHash
	if !n.adoptHistoryAs(h) {
		return
	}
	c.fetching, c.adopted = false, m.From
	if n.confHash == conf {
		// The usual case: lead at once, in the same step, so that the
		// lowered Current of the adopted history is never persisted on its
		// own (becomeLeader raises it to the new epoch).
		n.becomeLeader()
		return
	}
	// The history carried a newer configuration: count the promises again
	// under it, and choose again (docs/protocol.md §10, rule 5).
	n.chooseHistory()
}

// adoptHistoryAs adopts m like adoptHistory but without touching the promise.
func (n *Node) adoptHistoryAs(m Message) bool {
	// The candidate may itself follow a newer Current than the quorum's best
	// history (when its own group was not in the quorum); the quorum's
	// history is the one that holds everything committed, and becomeLeader
	// raises Current to the new epoch within the same step.
	p, l, cur := n.hs.Promised, n.hs.Leader, n.hs.Current
	n.hs.Promised, n.hs.Current = 0, 0
	ok := n.adoptHistory(m)
	if !ok {
		n.hs.Current = cur
	}
	n.hs.Promised, n.hs.Leader = p, l
	if ok && n.hs.Current > n.hs.Promised {
		// The adopted history follows an epoch newer than this server's
		// own promise (its group took no part in the quorum). It may not
		// lead at once (the history can carry a configuration under which
		// it must count its promises again), and a Current above the
		// promise must never reach the disk: the candidate promises its
		// own epoch, above every epoch a history can follow.
		n.hs.Promised, n.hs.Leader = n.glCand.epoch, n.id
	}
	return ok
}

// becomeLeader starts gl.2.1: the candidate's log is now the chosen initial
// history; it follows its own epoch, appends a no-op of that epoch, and
// synchronizes the coordinators, which answer its first append with a
// catch-up request.
func (n *Node) becomeLeader() {
	c := n.glCand
	n.glCand = nil
	if n.hs.Promised > c.epoch || !n.mayVote() {
		// A newer epoch was promised; or the adopted history registers
		// another incarnation of this server, whose own acknowledgments
		// would then count for nothing: it leaves the role to a server
		// whose votes count.
		return
	}
	n.hs.Promised, n.hs.Leader, n.hs.Current = c.epoch, n.id, c.epoch
	gl := &leader{epoch: c.epoch, groups: make([]glGroup, len(n.voters.Groups)), since: n.tick}
	for g := range gl.groups {
		if a, ok := c.acks[g]; ok {
			gl.groups[g] = glGroup{gc: a.From, ge: a.GroupEpoch, heard: n.tick}
		} else if g < len(n.gcTable) {
			gl.groups[g] = glGroup{gc: n.gcTable[g], heard: n.tick}
		}
	}
	n.gl = gl
	n.gcTable = n.gcIDs()
	gl.pending = append([]Entry{{Type: EntryNoop}}, gl.pending...)
	n.flushLeader()
}

// gcIDs returns the leader's coordinator per group.
func (n *Node) gcIDs() []ID {
	ids := make([]ID, len(n.gl.groups))
	for g, x := range n.gl.groups {
		ids[g] = x.gc
	}
	return ids
}

// wantsFlush reports whether the leader has something to send.
func (gl *leader) wantsFlush(n *Node) bool {
	return (len(gl.pending) > 0 && n.inflightRoom() > 0) || n.hs.Commit > gl.sentCommit
}

// inflightRoom is how many more entries the leader may append before its
// commit point catches up (Config.MaxInflight).
func (n *Node) inflightRoom() int {
	gl := n.gl
	inflight := int(gl.counter)
	if c := n.hs.Commit; c.Epoch() == gl.epoch {
		inflight -= int(c.Counter())
	}
	return n.cfg.MaxInflight - inflight
}

// flushLeader is gl.3.1: order the pending proposals into zxids of this
// epoch, append them, and send them, pipelined, to every coordinator.
// Everything that arrived since the last Ready goes out, in batches of at most
// MaxBatch, as far as MaxInflight allows.
func (n *Node) flushLeader() {
	gl := n.gl
	for len(gl.pending) > 0 {
		room := n.inflightRoom()
		if room <= 0 {
			break
		}
		k := min(len(gl.pending), n.cfg.MaxBatch, room)
		batch := gl.pending[:k]
		gl.pending = gl.pending[k:]
		prev := n.log.last()
		ents := make([]Entry, len(batch))
		for i, e := range batch {
			gl.counter++
			e.Zxid = MakeZxid(gl.epoch, gl.counter)
			ents[i] = e
		}
		n.appendEntries(ents)
		n.broadcastAppend(prev, ents)
	}
	if n.hs.Commit > gl.sentCommit {
		n.broadcastAppend(n.log.last(), nil)
	}
}

// broadcastAppend sends entries after prev, with the commit point, to every
// coordinator (gl.3.1, with gl.3.2's COMMIT piggybacked).
func (n *Node) broadcastAppend(prev Zxid, ents []Entry) {
	gl := n.gl
	gl.lastBeat = n.tick
	gl.sentCommit = n.hs.Commit
	gcs := n.gcIDs()
	probe := len(ents) == 0 && (gl.lastProbe == 0 || n.tick-gl.lastProbe >= int64(n.cfg.HeartbeatTicks))
	if probe {
		gl.lastProbe = n.tick
	}
	for g, x := range gl.groups {
		if x.gc == None {
			if probe {
				n.probeGroup(g, prev, gcs)
			}
			continue
		}
		m := Message{Type: MsgAppend, To: x.gc, Epoch: gl.epoch, Leader: n.id, Group: g, GroupEpoch: x.ge,
			Prev: prev, Entries: ents, Commit: n.hs.Commit, GCs: gcs}
		if x.gc == n.id {
			// The leader coordinates this group too, and takes its own
			// append at once. Sent to itself, the append would be
			// stepped only after this Ready's fsync, holding the relay to
			// the group's members until the leader's log is durable: a
			// write would wait for two fsyncs in a row instead of two at
			// once. The relay claims nothing about this server's log (a
			// coordinator elsewhere relays on receipt, before its own
			// fsync); the acknowledgment of the leader's own entries is a
			// message to itself and still waits for it.
			m.From, m.Inc = n.id, n.inc
			n.handleAppend(m)
			continue
		}
		n.send(m)
	}
}

// probeGroup looks for the coordinator of a group the leader knows none of
// (the group took no part in its election and no table named one): every
// member gets an empty append, at most once per heartbeat. The coordinator answers it like any append,
// asking to be synchronized; the others answer with the coordinator they
// follow. Without this, a group left out of the election stays orphaned and
// its coordinator, never hearing a leader, keeps campaigning and unseating
// the leader.
func (n *Node) probeGroup(g int, prev Zxid, gcs []ID) {
	for _, id := range n.voters.Groups[g] {
		n.send(Message{Type: MsgAppend, To: id, Epoch: n.gl.epoch, Leader: n.id, Group: g,
			Prev: prev, Commit: n.hs.Commit, GCs: gcs})
	}
}

// handleGAck is gl.3.2: record a group's majority point and commit what
// groups of quorum weight have reached.
func (n *Node) handleGAck(m Message) {
	gl := n.gl
	if gl == nil || m.Group < 0 || m.Group >= len(gl.groups) {
		return
	}
	if m.Reject {
		if m.Epoch > n.maxEpoch {
			n.maxEpoch = m.Epoch
		}
		if m.Epoch > gl.epoch {
			// A newer epoch exists: this leader is fenced. Run again at
			// once, above it, rather than leave the ensemble leaderless
			// for an election timeout.
			n.gl = nil
			if n.gc != nil {
				n.campaignGL()
			}
			return
		}
		x := &gl.groups[m.Group]
		switch {
		case m.Coord != None && m.GroupEpoch > x.ge:
			*x = glGroup{gc: m.Coord, ge: m.GroupEpoch, heard: x.heard}
		case m.From == x.gc && m.Coord == None:
			// The server taken for the coordinator is not one and knows
			// of none: look for it (probeGroup) instead of writing to it.
			// Its group epoch may be below the one it won (it lost its
			// state, and with it the group epoch); a late answer from
			// before it won costs one probe, which it answers.
			*x = glGroup{ge: x.ge, heard: x.heard}
		}
		return
	}
	if m.Epoch != gl.epoch {
		return
	}
	x := &gl.groups[m.Group]
	if m.GroupEpoch < x.ge && n.stillCoordinates(m.Group, x.gc) {
		return // a replaced coordinator
	}
	if m.GroupEpoch > x.ge || x.gc != m.From {
		*x = glGroup{gc: m.From, ge: m.GroupEpoch}
	}
	x.heard = n.tick
	if m.Conf != n.confHash {
		return // counted under another configuration (confchange.go)
	}
	if m.Zxid > x.acked && m.Zxid <= n.log.last() {
		x.acked = m.Zxid
	}
	c := Zxid(n.voters.CommittedIndex(func(g int) uint64 { return uint64(gl.groups[g].acked) }))
	n.advanceCommit(c)
}

// stillCoordinates reports whether gc, which the leader takes for group
// g's coordinator, may still be it: a member of g in the leader's
// configuration. Group epochs only order the coordinators of one set of
// members; once every member that knew the old group epoch has been
// replaced, the new members count theirs from scratch, and the leader
// follows them instead of waiting for a group epoch they never reach.
func (n *Node) stillCoordinates(g int, gc ID) bool {
	return gc != None && slices.Contains(n.voters.Groups[g], gc)
}

// handleGCHello registers a coordinator (possibly a new one after group
// recovery) and synchronizes it.
func (n *Node) handleGCHello(m Message) {
	if c := n.glCand; c != nil && !c.fetching {
		if _, ok := c.acks[m.Group]; !ok {
			n.send(Message{Type: MsgNewGEpoch, To: m.From, Epoch: c.epoch, Leader: n.id, Group: m.Group,
				Current: n.hs.Current, Zxid: n.log.last()})
		}
		return
	}
	gl := n.gl
	if gl == nil || m.Group < 0 || m.Group >= len(gl.groups) || m.Epoch > gl.epoch {
		return
	}
	x := &gl.groups[m.Group]
	if m.GroupEpoch < x.ge && n.stillCoordinates(m.Group, x.gc) {
		return
	}
	ge := x.ge
	switch {
	case x.gc == m.From && x.ge == m.GroupEpoch:
		x.heard = n.tick
	case n.stillCoordinates(m.Group, m.From) || !n.stillCoordinates(m.Group, x.gc) ||
		n.tick-x.heard > int64(n.cfg.ElectionTicks):
		*x = glGroup{gc: m.From, ge: m.GroupEpoch, heard: n.tick}
		ge = x.ge
	default:
		// A server this leader's configuration leaves out of the group
		// (removed by entries it missed, and elected again under the
		// configuration before by others removed with it) does not
		// displace a coordinator the configuration puts in it and that
		// answers the leader: writing to it instead, the leader would
		// leave the group in force unheard until its coordinator ran for
		// leader. It gets the history, which tells it of its removal.
		// One the leader has not heard for an election timeout is
		// displaced: the group's members may all follow the removed
		// server, and then writing to it is what brings them the
		// configuration in force (through its refusal, which fences
		// this leader above the epochs its members promised it).
		ge = m.GroupEpoch
	}
	s, ok := n.syncFor(m)
	if !ok {
		return
	}
	s.Type, s.To, s.Group, s.GroupEpoch, s.GCs = MsgGSync, m.From, m.Group, ge, n.gcIDs()
	n.send(s)
}

// tickLeader sends heartbeats and steps down when groups of quorum weight
// have not been heard from for an election timeout, so that a partitioned
// leader stops accepting proposals it cannot commit.
func (n *Node) tickLeader() {
	gl := n.gl
	hb, el := int64(n.cfg.HeartbeatTicks), int64(n.cfg.ElectionTicks)
	n.maybeRegister()
	if n.tick-gl.lastBeat >= hb {
		n.broadcastAppend(n.log.last(), nil)
	}
	if n.gc != nil && n.group < len(gl.groups) {
		// Its own group is heard through its own coordinator role: as
		// recently as a majority of its members was.
		gl.groups[n.group].heard = min(gl.groups[n.group].heard, n.groupHeard())
	}
	if n.tick-gl.since > 2*el {
		alive := groupsHeard(n.voters, func(g int) bool { return n.tick-gl.groups[g].heard <= 2*el })
		if !alive {
			n.gl = nil
		}
	}
}
