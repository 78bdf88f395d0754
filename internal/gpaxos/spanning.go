package gpaxos

import (
	"slices"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// A SpanningTopology sends each group's relay to every voter, not only to
// the group's members: the Giraffe paper's dissemination (§III-A), where a
// message goes down all t trees of an interior-node-disjoint forest, each
// copy tagged with its tree's color, so that any t-1 crashed interior
// servers still leave every live server one whole tree. A copy of another
// group's relay teaches a server entries of the same leader's history
// (learnRelay); it acknowledges them to its own coordinator only, so votes
// are counted exactly as with a per-group tree.
type SpanningTopology interface {
	Topology
	// SpanChildren returns the servers id forwards group g's relay to, in a
	// tree over every voter of v rooted at g's coordinator root. It must be
	// a pure function of its arguments.
	SpanChildren(v quorum.Config, g int, root ID, down []ID, id ID) []ID
}

// ForestTopology is tree g of the forest for every group g: the group's
// live members as a complete tree of the given fan-out rooted at its
// coordinator (as TreeTopology lays them out: the core of the tree), every
// other voter a leaf below the shallowest core server with room (the
// forest's construction, internal/forest), the members the coordinator
// routes around last. When the core has too little room (a small group, or
// members down), the remaining servers hang below the leaves already
// placed, breadth first.
type ForestTopology struct {
	Fanout int
}

// Children implements Topology for a configuration of one group, where
// tree and forest coincide.
func (t ForestTopology) Children(members []ID, root ID, down []ID, id ID) []ID {
	return TreeTopology(t).Children(members, root, down, id)
}

// SpanChildren implements SpanningTopology.
func (t ForestTopology) SpanChildren(v quorum.Config, g int, root ID, down []ID, id ID) []ID {
	if g < 0 || g >= len(v.Groups) {
		return nil
	}
	f := max(t.Fanout, 1)
	order := treeOrder(v.Groups[g], root, down)
	core := len(order)
	for core > 1 && slices.Contains(down, order[core-1]) {
		core--
	}
	// Every voter outside the core, in the order of the groups after g,
	// then the core's down members, which must never host anyone.
	var rest []ID
	for j := 1; j < len(v.Groups); j++ {
		for _, m := range v.Groups[(g+j)%len(v.Groups)] {
			if m != root && !slices.Contains(rest, m) {
				rest = append(rest, m)
			}
		}
	}
	rest = append(rest, order[core:]...)
	// Position p of the core has core children p*f+1 .. p*f+f; its other
	// places take outside servers, shallowest position first.
	var kids []ID
	if i := slices.Index(order[:core], id); i >= 0 {
		lo, hi := min(i*f+1, core), min(i*f+f+1, core)
		kids = append(kids, order[lo:hi]...)
	}
	placed := 0 // servers of rest placed so far
	for p := 0; p < core && placed < len(rest); p++ {
		room := f - (min(p*f+f+1, core) - min(p*f+1, core))
		take := min(room, len(rest)-placed)
		if order[p] == id {
			kids = append(kids, rest[placed:placed+take]...)
		}
		placed += take
	}
	// Overflow: below the placed outside servers, f each, breadth first.
	for host := 0; placed < len(rest); host++ {
		take := min(f, len(rest)-placed)
		if rest[host] == id {
			kids = append(kids, rest[placed:placed+take]...)
		}
		placed += take
	}
	return kids
}

// relayChildren returns the servers this node forwards group g's relay to,
// rooted at coordinator root with its down list.
func (n *Node) relayChildren(g int, root ID, down []ID) []ID {
	if s, ok := n.cfg.Topology.(SpanningTopology); ok {
		return s.SpanChildren(n.voters, g, root, down, n.id)
	}
	if g < 0 || g >= len(n.voters.Groups) {
		return nil
	}
	return n.cfg.Topology.Children(n.voters.Groups[g], root, down, n.id)
}

// relayMark is the last copy of a group's relay that brought entries: who
// relayed it, in which group epoch, up to which zxid.
type relayMark struct {
	coord ID
	ge    uint64
	last  Zxid
}

// learnRelay handles a copy of another group's relay under a
// SpanningTopology: forward it down that group's tree, then take its
// entries as a learner. The copy's entries come from the same leader's
// history as the log when its epoch is the one the log follows (accept's
// rule), so taking them keeps invariant L; a server acknowledges what it
// now holds to its own coordinator only, as it would its own group's
// relay. A repeat of a range already seen from the same relay (a tree that
// changed under messages in flight) is dropped, which also stops copies
// from circling.
func (n *Node) learnRelay(m Message) {
	if _, ok := n.cfg.Topology.(SpanningTopology); !ok {
		return
	}
	if len(m.Entries) > 0 {
		last := m.Entries[len(m.Entries)-1].Zxid
		if k := n.relaySeen[m.Group]; k.coord == m.Coord && k.ge == m.GroupEpoch && last <= k.last {
			return
		}
		if n.relaySeen == nil {
			n.relaySeen = map[int]relayMark{}
		}
		n.relaySeen[m.Group] = relayMark{coord: m.Coord, ge: m.GroupEpoch, last: last}
	}
	for _, c := range n.relayChildren(m.Group, m.Coord, m.Down) {
		f := m
		f.To = c
		n.send(f)
	}
	before := n.log.last()
	if n.accept(m.Epoch, m.Prev, m.Entries, m.Commit) == acceptOK && n.log.last() > before && n.hs.Coordinator != None {
		n.ack(n.hs.Coordinator, n.hs.GroupEpoch)
	}
}

// acksRelay reports whether a member acknowledges its own group's relay
// copy m that it accepted, its log's last zxid having been before: always
// with a per-group tree; under a SpanningTopology not when m brought
// entries that another group's copy already delivered (that copy's
// acknowledgment stated them).
func (n *Node) acksRelay(m Message, before Zxid) bool {
	if _, ok := n.cfg.Topology.(SpanningTopology); !ok {
		return true
	}
	return len(m.Entries) == 0 || n.log.last() > before
}
