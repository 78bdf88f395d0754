package gpaxos

import "slices"

// This file is group-level recovery: a server that no longer hears its
// group's coordinator asks the group whether it would elect it (pre-vote),
// then campaigns under a new group epoch; a majority of the group's
// promises makes it the coordinator (coordinator.go, becomeCoordinator).

// gcCandidate is a server campaigning to coordinate its group.
type gcCandidate struct {
	ge    uint64
	start int64
	acks  map[ID]Message
	// replaced is the coordinator this candidacy replaces (None when the
	// group had none): when it was also the global leader, the group has
	// just found the leader silent for an election timeout too.
	replaced ID
}

// gcPreCandidate is a server asking its group whether it would elect it
// (pre-vote): only with a majority's yes does it campaign, so a server cut
// off from its group does not raise its group epoch while alone, and, back
// among its group, does not unseat a coordinator the others still follow.
type gcPreCandidate struct {
	ge     uint64
	start  int64
	grants map[ID]bool
}

// preCampaignGC asks the group whether it would promise the next group
// epoch to this server.
func (n *Node) preCampaignGC() {
	ge := max(n.hs.GroupEpoch, n.maxGE) + 1
	n.preGC = &gcPreCandidate{ge: ge, start: n.tick, grants: map[ID]bool{n.id: true}}
	for _, id := range n.members() {
		if id != n.id {
			n.send(Message{Type: MsgGroupPreElect, To: id, Group: n.group, GroupEpoch: ge, Zxid: n.confZxid, Conf: n.confHash,
				Current: n.hs.Current, Last: n.log.last()})
		}
	}
	n.maybeWinPreVote()
}

// handleGroupPreElect says whether this member would promise m.GroupEpoch
// to its sender: the sender is a member of its group, this member's votes
// count, the epoch is newer than its promise, the member no longer hears
// its coordinator (or has none, or the sender is that coordinator,
// reclaiming its role), and the sender's history is at least as new as
// its own (upToDate).
func (n *Node) handleGroupPreElect(m Message) {
	if m.Group != n.group {
		return
	}
	coord := n.hs.Coordinator
	if coord == n.id && n.gc == nil {
		// Its own candidacy that has not won, or a role lost in a
		// restart: no coordinator. One that cannot win (its log too old:
		// its configuration counts the others' promises for nothing)
		// would otherwise keep the group from electing anyone.
		coord = None
	}
	// From the coordinator's last message, not this member's own last
	// pre-vote: two members pre-voting in turn would refuse each other.
	silent := n.gc == nil && n.tick-n.heardCoord >= int64(n.cfg.ElectionTicks)
	member := slices.Contains(n.members(), m.From) || n.newerConfigMember(m)
	grant := member && n.mayVote() && m.GroupEpoch > n.hs.GroupEpoch &&
		(coord == None || coord == m.From || silent || n.coordinatorOutdated(m)) &&
		(n.upToDate(m.Current, m.Last) || n.removedAhead(m))
	ack := Message{Type: MsgGroupPreElectAck, To: m.From, Group: n.group, GroupEpoch: m.GroupEpoch, Reject: !grant}
	if !grant {
		// A refusal names the group epoch this member promised, so that
		// the sender asks above it next time (handleGroupPreElectAck).
		ack.GroupEpoch = n.hs.GroupEpoch
	}
	if !member && coord != m.From {
		// The sender's configuration is not this one (it was removed, or
		// lags): name the coordinator, which catches it up.
		ack.Coord = coord
	}
	n.send(ack)
}

// coordinatorOutdated reports whether a pre-vote's sender runs under a
// newer configuration than both this member and the coordinator it
// follows (as that coordinator last named its configuration): the
// coordinator missed changes the sender holds, perhaps the one that
// removed it. Such a coordinator is still heard by members that missed
// the same changes (their configuration puts it in their group), and it
// may keep running for leader under its old configuration, each time
// drawing from them promises above the epoch of the leader in force, so
// that they can accept nothing the leader sends; the coordinators of the
// configuration in force refuse it, so it never learns of its removal.
// Its members, refusing every pre-vote while they hear it, would keep the
// group away from the configuration in force for good. A pre-vote is only
// sent by a member that no longer hears its coordinator, and in a group
// whose coordinator relays every change its members hold, no member runs
// under a newer configuration than its coordinator: this grants nothing
// there, nor while this member has had no append from its coordinator
// to know its configuration by.
func (n *Node) coordinatorOutdated(m Message) bool {
	c := n.coordConf
	known := c.coord == n.hs.Coordinator && c.ge == n.hs.GroupEpoch
	return known && m.Zxid > c.conf && m.Zxid > n.confZxid
}

// coordConfig is the configuration (its entry's zxid) a coordinator named
// in a group append under a group epoch.
type coordConfig struct {
	coord ID
	ge    uint64
	conf  Zxid
}

// upToDate reports whether a history (its Current epoch, then its last
// zxid) is at least as new as this server's: a pre-vote's sender's, or a
// candidate's for leader that this server's configuration leaves out
// (removedCandidate). Only liveness rests on it (the election itself
// counts promises whatever the logs, and the coordinator adopts the newest
// history it finds): among any majority, the member with the newest
// history can win, and a coordinator that lags, above all one that lost
// its disk, is not elected to fetch a history, perhaps a snapshot of
// gigabytes, before its group can go on.
func (n *Node) upToDate(current Epoch, last Zxid) bool {
	return current > n.hs.Current || current == n.hs.Current && last >= n.log.last()
}

// removedAhead reports whether a pre-vote's sender may lack only the
// change that removed this server: this server's newest configuration
// leaves it out and puts the sender in its group, and the sender runs
// under that configuration or the one before it (GroupPreElect's Conf).
// This server can never campaign, and the sender's configuration may need
// its vote (a group of two that lost one), so refusing the sender for its
// older history would leave the group, and perhaps the ensemble, without a
// coordinator for good; elected, the sender takes the newest history among
// its group's promises, this server's included. A sender further behind is
// refused: it may run under a configuration the ensemble has left, as a
// server removed since (its configuration would still count this one's
// vote).
func (n *Node) removedAhead(m Message) bool {
	if n.voting() || !slices.Contains(n.members(), m.From) {
		return false
	}
	before, _ := n.configAt(n.confZxid - 1)
	return m.Conf == n.confHash || m.Conf == ConfigHash(before)
}

// handleGroupPreElectAck counts the group's answers to a pre-vote.
func (n *Node) handleGroupPreElectAck(m Message) {
	c := n.preGC
	if m.Reject && m.Coord != None && m.Coord != n.id {
		n.requestCatchup(MsgCatchupReq, m.Coord)
	}
	if m.Reject && m.GroupEpoch > n.maxGE {
		// The member promised a group epoch this server did not know of
		// (it was away when that election ran, or lost its record of
		// it): its next pre-vote asks above it. Otherwise it would ask
		// for the same group epoch for ever, refused each time, while
		// the member, whose own history may be older, wins no pre-vote
		// of this server's either.
		n.maxGE = m.GroupEpoch
	}
	if c == nil || m.Reject || m.GroupEpoch != c.ge {
		return
	}
	c.grants[m.From] = true
	n.maybeWinPreVote()
}

// maybeWinPreVote campaigns once a majority of the group said it would
// promise.
func (n *Node) maybeWinPreVote() {
	c := n.preGC
	if !n.voters.GroupMajority(n.group, func(id ID) bool { return c.grants[id] }) {
		return
	}
	n.preGC = nil
	n.campaignGC()
}

// campaignGC starts group-level recovery under a new group epoch.
func (n *Node) campaignGC() {
	ge := max(n.hs.GroupEpoch, n.maxGE) + 1
	n.maxGE = ge
	n.gcCand = &gcCandidate{ge: ge, start: n.tick, acks: map[ID]Message{}}
	if n.hs.Coordinator != n.id {
		n.gcCand.replaced = n.hs.Coordinator
	}
	for _, id := range n.members() {
		n.send(Message{Type: MsgGroupElect, To: id, Group: n.group, GroupEpoch: ge, Zxid: n.confZxid, Current: n.hs.Current})
	}
}

// newerConfigMember reports whether the sender of a group (pre-)election,
// which this server's configuration does not put in its group, runs under
// a newer configuration (newerConfig: m.Zxid, m.Current) that does: this
// server missed the changes that added the sender, and perhaps removed
// the others of its group. Refusing would stop the group for good when
// its majority needs this server and no leader is left to catch it up.
// Granting risks nothing: a group epoch only fences coordinators (safety
// rests on the acceptors' global promises), the candidate counts the
// promise under its own configuration, and the coordinator it becomes
// syncs this server's log, the configuration included. A removed server
// that missed its removal runs under an older configuration than the
// group it left and is still refused.
func (n *Node) newerConfigMember(m Message) bool { return n.newerConfig(m.Zxid, m.Current) }

// newerConfig reports whether a server whose configuration's entry has
// zxid conf and whose log follows epoch current's history runs under a
// newer configuration than this one: its entry is later, and its history
// at least as new, so it holds the changes this server missed.
func (n *Node) newerConfig(conf Zxid, current Epoch) bool {
	return conf > n.confZxid && current >= n.hs.Current
}

// handleGroupElect promises a group epoch to a coordinator candidate.
func (n *Node) handleGroupElect(m Message) {
	if m.Group != n.group {
		return
	}
	if !n.mayVote() {
		// It may have forgotten a promise of this group epoch to another
		// candidate (lost durable state), and a candidate whose
		// configuration registers no incarnation of it would count its
		// vote: it counts as down until it is registered.
		return
	}
	// A server the configuration does not put in this group (one removed
	// that missed its removal) is refused: it would take the role from a
	// coordinator of the configuration in force. One whose configuration
	// is newer than this server's is not refused (newerConfigMember).
	member := slices.Contains(n.members(), m.From) || n.newerConfigMember(m)
	if member && (m.GroupEpoch > n.hs.GroupEpoch || (m.GroupEpoch == n.hs.GroupEpoch && n.hs.Coordinator == m.From)) {
		n.hs.GroupEpoch, n.hs.Coordinator = m.GroupEpoch, m.From
		n.followCoordinator(m.GroupEpoch, m.From, false)
		n.send(Message{Type: MsgGroupElectAck, To: m.From, Group: n.group, GroupEpoch: m.GroupEpoch,
			Epoch: n.hs.Promised, Leader: n.hs.Leader, Current: n.hs.Current, Zxid: n.log.last(),
			Commit: n.hs.Commit, GCs: n.gcTable})
		return
	}
	n.send(Message{Type: MsgGroupElectAck, To: m.From, Group: n.group, GroupEpoch: n.hs.GroupEpoch, Reject: true})
}

// handleGroupElectAck counts promises; a majority makes the candidate the
// coordinator.
func (n *Node) handleGroupElectAck(m Message) {
	if m.GroupEpoch > n.maxGE {
		n.maxGE = m.GroupEpoch
	}
	c := n.gcCand
	if c == nil || m.Reject || m.GroupEpoch != c.ge {
		return
	}
	c.acks[m.From] = m
	if !n.voters.GroupMajority(n.group, func(id ID) bool { a, ok := c.acks[id]; return ok && n.counts(id, a.Inc) }) {
		return
	}
	n.gcCand = nil
	n.becomeCoordinator(c)
}
