package gpaxos

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// This file is configuration change: one server added to or removed from
// one group at a time, through the log (docs/protocol.md §7).
//
// The rules, and why:
//   - A configuration takes effect where it is appended, not where it
//     commits: every server uses the newest configuration entry in its log
//     (or its snapshot's, or the initial one). Quorums of a configuration
//     and of the one that differs from it by one server intersect
//     (quorum.TestSingleChangeIntersect), so at most these two being in use
//     at once is safe.
//   - The leader accepts a change only when its own epoch's first entry
//     has committed and no configuration entry is uncommitted. The first
//     rule is the fix of Raft's single-server-change bug: without it a new
//     leader could append a change while an earlier leader's uncommitted
//     change, which it never saw, commits under a third configuration.
//   - Messages whose counting depends on the configuration say which one
//     they were counted under: a coordinator's group index (GAck) carries
//     the hash of its configuration and the leader counts it only under
//     the same one; a group's promise (GEpochAck) lists the promisers, and
//     the candidate counts them under its own configuration, again after it
//     adopts the chosen history (which may carry a newer configuration).
//   - A server the committed configuration leaves out stops campaigning and
//     drops its roles; it still accepts the log as a learner, so it can be
//     added back.

// ConfOp is a kind of configuration change.
type ConfOp uint8

const (
	// ConfAddServer adds Server to Group.
	ConfAddServer ConfOp = iota + 1
	// ConfRemoveServer removes Server from whatever group it votes in.
	ConfRemoveServer
	// ConfRegister makes Incarnation the incarnation that votes for Server
	// (quorum.Config.Incarnations). Replacing a registered incarnation by
	// another (a server that lost its durable state) is done only when
	// Replaces names the registered one; until that entry commits, Server's
	// votes count for nobody (see Node.counts).
	ConfRegister
)

// ConfChange is one change of the voting configuration.
type ConfChange struct {
	Op     ConfOp
	Server ID
	Group  int // ConfAddServer only
	// Incarnation and Replaces: ConfRegister only.
	Incarnation, Replaces uint64
}

func (cc ConfChange) String() string {
	switch cc.Op {
	case ConfAddServer:
		return fmt.Sprintf("add server %d to group %d", cc.Server, cc.Group)
	case ConfRegister:
		return fmt.Sprintf("register incarnation %x of server %d (replacing %x)", cc.Incarnation, cc.Server, cc.Replaces)
	}
	return fmt.Sprintf("remove server %d", cc.Server)
}

// Errors of ProposeConfChange.
var (
	// ErrNotLeader: only the global leader orders configuration changes.
	ErrNotLeader = errors.New("gpaxos: not the global leader")
	// ErrConfChangePending: a change is uncommitted, or the leader's own
	// epoch has not committed an entry yet; retry later.
	ErrConfChangePending = errors.New("gpaxos: a configuration change is in progress")
	// ErrBadConfChange: the change does not apply to the configuration.
	ErrBadConfChange = errors.New("gpaxos: invalid configuration change")
)

// ApplyConfChange returns c changed by cc, without modifying c.
func ApplyConfChange(c quorum.Config, cc ConfChange) (quorum.Config, error) {
	out := c.Clone()
	switch cc.Op {
	case ConfAddServer:
		if cc.Server == None || c.GroupOf(cc.Server) >= 0 {
			return c, fmt.Errorf("%w: server %d already votes", ErrBadConfChange, cc.Server)
		}
		if cc.Group < 0 || cc.Group >= len(c.Groups) {
			return c, fmt.Errorf("%w: no group %d", ErrBadConfChange, cc.Group)
		}
		out.Groups[cc.Group] = append(out.Groups[cc.Group], cc.Server)
	case ConfRemoveServer:
		g := c.GroupOf(cc.Server)
		if g < 0 {
			return c, fmt.Errorf("%w: server %d does not vote", ErrBadConfChange, cc.Server)
		}
		if len(c.Groups[g]) == 1 {
			return c, fmt.Errorf("%w: server %d is the last of group %d", ErrBadConfChange, cc.Server, g)
		}
		out.Groups[g] = slices.DeleteFunc(out.Groups[g], func(id quorum.ID) bool { return id == cc.Server })
		delete(out.Incarnations, cc.Server)
	case ConfRegister:
		if c.GroupOf(cc.Server) < 0 {
			return c, fmt.Errorf("%w: server %d does not vote", ErrBadConfChange, cc.Server)
		}
		if cc.Incarnation == 0 || c.Incarnations[cc.Server] != cc.Replaces {
			return c, fmt.Errorf("%w: server %d's registered incarnation is %x, not %x", ErrBadConfChange,
				cc.Server, c.Incarnations[cc.Server], cc.Replaces)
		}
		if out.Incarnations == nil {
			out.Incarnations = map[quorum.ID]uint64{}
		}
		out.Incarnations[cc.Server] = cc.Incarnation
	default:
		return c, fmt.Errorf("%w: unknown operation %d", ErrBadConfChange, cc.Op)
	}
	return out, nil
}

// EncodeConfEntry is the payload of an EntryConfChange: the whole new
// configuration, so that a reader needs nothing else to know it, and the
// proposer's context (opaque to the protocol; the server records there the
// addresses of a joining server).
func EncodeConfEntry(c quorum.Config, context []byte) []byte {
	cb := EncodeConfig(c)
	b := binary.AppendUvarint(nil, uint64(len(cb)))
	b = append(b, cb...)
	return append(b, context...)
}

// DecodeConfEntry parses EncodeConfEntry's output. The context aliases b.
func DecodeConfEntry(b []byte) (quorum.Config, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return quorum.Config{}, nil, errors.New("gpaxos: malformed configuration entry")
	}
	c, err := DecodeConfig(b[k : k+int(n)])
	if err != nil {
		return quorum.Config{}, nil, err
	}
	return c, b[k+int(n):], nil
}

// EncodeConfig encodes a configuration: the groups, then, when any server
// is registered, the registrations in server order (a configuration without
// registrations encodes as it did before registrations existed).
func EncodeConfig(c quorum.Config) []byte {
	b := binary.AppendUvarint(nil, uint64(len(c.Groups)))
	for _, g := range c.Groups {
		b = binary.AppendUvarint(b, uint64(len(g)))
		for _, id := range g {
			b = binary.AppendUvarint(b, uint64(id))
		}
	}
	if len(c.Incarnations) == 0 {
		return b
	}
	ids := make([]quorum.ID, 0, len(c.Incarnations))
	for id := range c.Incarnations {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(id))
		b = binary.BigEndian.AppendUint64(b, c.Incarnations[id])
	}
	return b
}

// DecodeConfig parses EncodeConfig's output.
func DecodeConfig(b []byte) (quorum.Config, error) {
	bad := errors.New("gpaxos: malformed configuration entry")
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	ng, ok := next()
	if !ok || ng > uint64(len(b))+1 {
		return quorum.Config{}, bad
	}
	var c quorum.Config
	if ng > 0 {
		c.Groups = make([][]quorum.ID, ng)
	}
	for g := range c.Groups {
		k, ok := next()
		if !ok || k > uint64(len(b)) {
			return quorum.Config{}, bad
		}
		for range k {
			id, ok := next()
			if !ok {
				return quorum.Config{}, bad
			}
			c.Groups[g] = append(c.Groups[g], quorum.ID(id))
		}
	}
	if len(b) == 0 {
		return c, nil
	}
	k, ok := next()
	if !ok || k == 0 || k > uint64(len(b)) {
		return quorum.Config{}, bad
	}
	c.Incarnations = make(map[quorum.ID]uint64, k)
	for range k {
		id, ok := next()
		if !ok || len(b) < 8 {
			return quorum.Config{}, bad
		}
		c.Incarnations[quorum.ID(id)] = binary.BigEndian.Uint64(b)
		b = b[8:]
	}
	if len(b) != 0 {
		return quorum.Config{}, bad
	}
	return c, nil
}

// ConfigHash identifies a configuration in messages whose counting depends
// on it. Equal configurations have equal hashes, which is all that matters:
// they count the same.
func ConfigHash(c quorum.Config) uint64 {
	h := fnv.New64a()
	h.Write(EncodeConfig(c))
	return h.Sum64()
}

// configAt returns the configuration in effect at z: the newest
// configuration entry at or before z in the log, else the snapshot's, else
// the initial one.
func (n *Node) configAt(z Zxid) (quorum.Config, Zxid) {
	for i := n.log.search(z) - 1; i >= 0; i-- {
		if e := n.log.ents[i]; e.Type == EntryConfChange {
			if c, _, err := DecodeConfEntry(e.Data); err == nil {
				return c, e.Zxid
			}
		}
	}
	if len(n.log.snap.Voters.Groups) > 0 {
		return n.log.snap.Voters, n.log.snap.Index
	}
	return n.cfg.Voters, 0
}

// refreshConfig makes the node use the newest configuration in its log,
// after anything that changed the log other than appending.
func (n *Node) refreshConfig() {
	c, z := n.configAt(n.log.last())
	n.setConfig(c, z)
}

// setConfig switches to configuration c, set by the entry at z.
func (n *Node) setConfig(c quorum.Config, z Zxid) {
	n.voters, n.confZxid, n.confHash = c, z, ConfigHash(c)
	n.reregistering = n.reregisteredIn(c, z)
	if gl := n.gl; gl != nil {
		// Group points above the commit were counted under the old
		// configuration: they count again only when re-reported under the
		// new one.
		// A coordinator being removed keeps coordinating until its removal
		// commits (the leader may be that coordinator): the leader keeps
		// writing to it until it answers that it no longer coordinates.
		for g := range gl.groups {
			gl.groups[g].acked = min(gl.groups[g].acked, n.hs.Commit)
		}
	}
}

// adoptConfigRoles is run between steps (maybeStepDown), never inside a
// handler, which may still hold a role it is acting in: a server added back
// to another group leaves the old group's roles, and one that a committed
// configuration leaves out drops all of its roles.
func (n *Node) adoptConfigRoles() {
	if g := n.voters.GroupOf(n.id); g >= 0 && g != n.group {
		// The group promise stays (hard state never goes back); a
		// coordinator of the new group with a lower group epoch learns of
		// it from the rejection and campaigns above it.
		n.group, n.gc, n.gcCand, n.heardGC = g, nil, nil, n.tick
	}
	n.checkRemoved()
}

// voting reports whether the node votes in its current configuration.
func (n *Node) voting() bool { return n.voters.GroupOf(n.id) >= 0 }

// mayCampaign reports whether the server may run for coordinator or leader:
// it votes, and its configuration comes from its log or a snapshot unless
// it was started as a member of the ensemble's initial configuration (see
// Config.Joining).
func (n *Node) mayCampaign() bool {
	return n.voting() && n.mayVote() && !(n.cfg.Joining && n.confZxid == 0 && n.log.snap.Index == 0)
}

// checkRemoved drops the roles of a server that a committed configuration
// leaves out. Until the change commits, a leader or coordinator being
// removed keeps its role, so that it can commit the change.
func (n *Node) checkRemoved() {
	if n.voting() && n.mayVote() || !n.voting() && n.confZxid > n.hs.Commit {
		return
	}
	// A server whose votes stopped counting (its configuration registers
	// another incarnation of it) holds no role: it could only act on
	// promises and acknowledgments that count for nobody.
	n.gl, n.glCand, n.gc, n.gcCand = nil, nil, nil, nil
}

// ProposeConfChange orders a configuration change. Only the global leader
// accepts one, and only when its epoch's first entry has committed and no
// other change is uncommitted or queued. The change takes effect on each
// server when it appends the entry; context travels with it (see
// EncodeConfEntry).
func (n *Node) ProposeConfChange(cc ConfChange, context []byte) error {
	gl := n.gl
	if gl == nil {
		return ErrNotLeader
	}
	if n.hs.Commit.Epoch() != gl.epoch || n.confZxid > n.hs.Commit {
		return ErrConfChangePending
	}
	for _, e := range gl.pending {
		if e.Type == EntryConfChange {
			return ErrConfChangePending
		}
	}
	c, err := ApplyConfChange(n.voters, cc)
	if err != nil {
		return err
	}
	gl.pending = append(gl.pending, Entry{Type: EntryConfChange, Data: EncodeConfEntry(c, context)})
	return nil
}

// Voters returns the configuration the node uses now (the newest in its
// log, committed or not).
func (n *Node) Voters() quorum.Config { return n.voters }

// QueuedVoters returns the configuration of a change the node, as global
// leader, has accepted but not yet appended (it waits for room in the
// pipeline, MaxInflight), and whether there is one. Appended, it becomes
// Voters; if the node loses the leadership first, it is dropped.
func (n *Node) QueuedVoters() (quorum.Config, bool) {
	if n.gl == nil {
		return quorum.Config{}, false
	}
	for _, e := range n.gl.pending {
		if e.Type == EntryConfChange {
			if c, _, err := DecodeConfEntry(e.Data); err == nil {
				return c, true
			}
		}
	}
	return quorum.Config{}, false
}

// ConfigAt returns the configuration in effect at z (which the log or the
// snapshot must still cover): what a snapshot taken at z must record.
func (n *Node) ConfigAt(z Zxid) quorum.Config {
	c, _ := n.configAt(z)
	return c
}
