package gpaxos

import (
	"slices"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// This file is incarnations: which life of a server's durable state may
// vote for it.
//
// A server that loses durable state (its disk is wiped or replaced, its
// hard state or the tail of its log is damaged) forgets promises and
// acknowledgments it made. Counting its votes again as if nothing had
// happened breaks both halves of the safety argument: a committed entry
// whose only acknowledgment inside some future recovery quorum was its own
// can vanish, and an epoch it promised to one candidate can be promised to
// another. So every server's durable state has an incarnation, a random
// number drawn when the state is created, every message carries it, and
// the configuration registers, per voter, the incarnation whose votes
// count (quorum.Config.Incarnations). Votes of another incarnation count
// for nobody; the server only learns.
//
// Registering is a configuration change ordered by the global leader
// (ConfRegister), at a server's request (MsgRegister):
//   - A first registration (from none) is a change whose quorums are a
//     subset of the old configuration's, so it is a single safe change like
//     any other; many are batched into one entry.
//   - Replacing a registered incarnation by a new one is done alone, and
//     until its entry commits the server's votes count for neither
//     incarnation (Node.counts). Quorums of the configuration with the
//     server left out are quorums of both the old and the new one, so each
//     step of old → none → new is safe; the entry commits without the
//     server, and by the time its new incarnation's votes count its log
//     holds that entry, hence everything committed before it, hence
//     everything the old incarnation may have acknowledged.
// docs/protocol.md §11 has the argument in full.

// counts reports whether a vote from incarnation inc of server id counts
// under the node's configuration: the configuration registers inc (or no
// incarnation) for id, and id's slot is not being re-registered by an
// uncommitted entry.
func (n *Node) counts(id ID, inc uint64) bool {
	if !n.voters.Counts(id, inc) {
		return false
	}
	return id != n.reregistering || n.confZxid <= n.hs.Commit
}

// mayVote reports whether this server may promise and acknowledge: its
// own votes count under its configuration, and, when it lost durable
// state, the configuration registers its new incarnation by name.
func (n *Node) mayVote() bool {
	if !n.counts(n.id, n.inc) {
		return false
	}
	if n.cfg.Recovering {
		reg, ok := n.voters.Incarnations[n.id]
		return ok && reg == n.inc
	}
	return true
}

// Recovering reports whether the node waits for its incarnation to be
// registered before it votes (Config.Recovering, or a configuration that
// registers another incarnation of it).
func (n *Node) recovering() bool { return n.voting() && !n.mayVote() }

// reregisteredIn returns the server whose registered incarnation c, set by
// the entry at z, replaces by another one (None when it replaces none).
// One change at a time means at most one.
func (n *Node) reregisteredIn(c quorum.Config, z Zxid) ID {
	if z == 0 || z <= n.log.snap.Index {
		return None // the initial configuration, or a committed one
	}
	prev, _ := n.configAt(z - 1)
	for id, inc := range c.Incarnations {
		if old, ok := prev.Incarnations[id]; ok && old != inc {
			return id
		}
	}
	return None
}

// maybeRequestRegistration asks the leader, at most once per election
// timeout, to register this server's incarnation when its configuration
// does not.
func (n *Node) maybeRequestRegistration() {
	if !n.voting() || n.inc == 0 {
		return
	}
	reg, ok := n.voters.Incarnations[n.id]
	if ok && reg == n.inc {
		return
	}
	if n.lastRegister != 0 && n.tick-n.lastRegister < int64(n.cfg.ElectionTicks) {
		return
	}
	m := Message{Type: MsgRegister, Epoch: n.hs.Promised, Replaces: reg}
	switch {
	case n.gl != nil:
		m.From, m.Inc = n.id, n.inc
		n.handleRegister(m)
	case n.hs.Leader == None || n.hs.Leader == n.id:
		return // no leader to ask yet: ask as soon as there is one
	default:
		m.To = n.hs.Leader
		n.send(m)
	}
	n.lastRegister = n.tick
}

// handleRegister files a server's request to be registered; the leader
// orders it when it can (maybeRegister).
func (n *Node) handleRegister(m Message) {
	gl := n.gl
	if gl == nil || m.Inc == 0 || n.voters.GroupOf(m.From) < 0 {
		return
	}
	if gl.registrations == nil {
		gl.registrations = map[ID]Message{}
	}
	gl.registrations[m.From] = m
}

// maybeRegister orders the registrations the leader has been asked for, as
// one configuration entry, when a change may be appended (the rules of
// ProposeConfChange). A replacement goes alone; first registrations are
// batched. Requests that do not apply any more are dropped: the server
// asks again once its log shows the configuration it must replace.
func (n *Node) maybeRegister() {
	gl := n.gl
	if len(gl.registrations) == 0 || n.hs.Commit.Epoch() != gl.epoch || n.confZxid > n.hs.Commit {
		return
	}
	for _, e := range gl.pending {
		if e.Type == EntryConfChange {
			return
		}
	}
	c := n.voters
	var first []ConfChange
	var replace *ConfChange
	for _, id := range sortedKeys(gl.registrations) {
		m := gl.registrations[id]
		reg, ok := c.Incarnations[id]
		cc := ConfChange{Op: ConfRegister, Server: id, Incarnation: m.Inc, Replaces: m.Replaces}
		switch {
		case c.GroupOf(id) < 0, ok && reg == m.Inc, reg != m.Replaces:
			delete(gl.registrations, id)
		case !ok:
			first = append(first, cc)
		case replace == nil:
			replace = &cc
		}
	}
	changes := first
	if replace != nil {
		changes = []ConfChange{*replace}
	}
	if len(changes) == 0 {
		return
	}
	for _, cc := range changes {
		next, err := ApplyConfChange(c, cc)
		if err != nil {
			return
		}
		c = next
		delete(gl.registrations, cc.Server)
	}
	gl.pending = append(gl.pending, Entry{Type: EntryConfChange, Data: EncodeConfEntry(c, nil)})
}

// promiserIncs returns the incarnations of ids as promises recorded them.
func promiserIncs(ids []ID, promises map[ID]Message) []uint64 {
	incs := make([]uint64, len(ids))
	for i, id := range ids {
		incs[i] = promises[id].Inc
	}
	return incs
}

// promisedBy reports whether a GEpochAck lists id as a promiser whose
// promise counts under the node's configuration.
func (n *Node) promisedBy(a Message, id ID) bool {
	i := slices.Index(a.Promisers, id)
	if i < 0 {
		return false
	}
	var inc uint64
	if i < len(a.PromiserIncs) {
		inc = a.PromiserIncs[i]
	}
	return n.counts(id, inc)
}
