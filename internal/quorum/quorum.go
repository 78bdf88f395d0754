// Package quorum implements the hierarchical weighted quorum system of
// Group Paxos: voting servers are partitioned into groups; a set of servers
// is a quorum when the groups in which it holds a strict majority have
// sizes that add up to strictly more than half of all voting servers.
//
// Any two quorums intersect: the two sets of "won" groups each weigh more than
// half the total, so they share a group, and inside that group two strict
// majorities share a server. The same property holds between a configuration
// and the configuration obtained from it by adding or removing one server (see
// docs/protocol.md), which is why configuration changes go one server at a time.
//
// The package is pure: no I/O, no clocks, no randomness. Every part of the
// protocol that needs a quorum (commit, global-leader recovery, group recovery)
// goes through this package so that all of them use one quorum system.
package quorum

import (
	"slices"
	"sort"
)

// ID identifies a server of the ensemble (ZooKeeper's myid); zero means
// none. It is Giraffe's one server-id type: gpaxos.ID and members.ID are
// aliases of it, and ids read from configuration files, flags and JSON are
// converted to it where they are parsed.
type ID uint64

// Config is a voting configuration: Groups[g] lists the servers that vote in
// group g. A server appears in at most one group. Empty groups weigh nothing.
type Config struct {
	Groups [][]ID // the voting servers of each group
	// Incarnations names, for each registered server, the incarnation whose
	// votes count for it: the identity of one life of the server's durable
	// state. A server whose disk was wiped or damaged comes back as a new
	// incarnation that remembers none of the promises and acknowledgments
	// the old one made, so it must not vote in the old one's place. A
	// server absent from the map is not registered yet and any incarnation
	// votes for it.
	Incarnations map[ID]uint64
}

// Counts reports whether a vote of server id's incarnation inc counts in c.
func (c Config) Counts(id ID, inc uint64) bool {
	reg, ok := c.Incarnations[id]
	return !ok || reg == inc
}

// Clone returns a deep copy of c.
func (c Config) Clone() Config {
	out := Config{Groups: make([][]ID, len(c.Groups))}
	for g := range c.Groups {
		out.Groups[g] = slices.Clone(c.Groups[g])
	}
	if len(c.Incarnations) > 0 {
		out.Incarnations = make(map[ID]uint64, len(c.Incarnations))
		for id, inc := range c.Incarnations {
			out.Incarnations[id] = inc
		}
	}
	return out
}

// Total returns the number of voting servers, the sum of all group sizes.
func (c Config) Total() int {
	n := 0
	for _, g := range c.Groups {
		n += len(g)
	}
	return n
}

// GroupOf returns the group that id votes in, or -1 when id does not vote.
func (c Config) GroupOf(id ID) int {
	for g, members := range c.Groups {
		if slices.Contains(members, id) {
			return g
		}
	}
	return -1
}

// Majority returns the smallest strict majority of n voters.
func Majority(n int) int { return n/2 + 1 }

// GroupMajority reports whether has holds for a strict majority of group g.
// An empty or unknown group never has a majority.
func (c Config) GroupMajority(g int, has func(ID) bool) bool {
	if g < 0 || g >= len(c.Groups) || len(c.Groups[g]) == 0 {
		return false
	}
	n := 0
	for _, id := range c.Groups[g] {
		if has(id) {
			n++
		}
	}
	return n >= Majority(len(c.Groups[g]))
}

// GroupsQuorum reports whether the groups for which won holds weigh strictly
// more than half of all voting servers. Each group counts once, whatever the
// number of reports about it: a group is a set element, not a counter, so two
// coexisting coordinators of one group cannot make it count twice.
func (c Config) GroupsQuorum(won func(g int) bool) bool {
	w := 0
	for g, members := range c.Groups {
		if len(members) > 0 && won(g) {
			w += len(members)
		}
	}
	return 2*w > c.Total()
}

// IsQuorum reports whether the servers for which has holds form a quorum.
func (c Config) IsQuorum(has func(ID) bool) bool {
	return c.GroupsQuorum(func(g int) bool { return c.GroupMajority(g, has) })
}

// GroupIndex returns the largest index that a strict majority of group g has
// acknowledged, given each member's acknowledged index (absent means 0).
func (c Config) GroupIndex(g int, acked func(ID) uint64) uint64 {
	if g < 0 || g >= len(c.Groups) || len(c.Groups[g]) == 0 {
		return 0
	}
	members := c.Groups[g]
	idx := make([]uint64, len(members))
	for i, id := range members {
		idx[i] = acked(id)
	}
	// Sorted descending, the Majority-th value is acknowledged by exactly
	// that many members or more, and no larger value is.
	sort.Slice(idx, func(i, j int) bool { return idx[i] > idx[j] })
	return idx[Majority(len(members))-1]
}

// CommittedIndex returns the largest index acknowledged by a quorum, given the
// per-group majority index of every group (see GroupIndex). groupIndex is
// called once per non-empty group.
func (c Config) CommittedIndex(groupIndex func(g int) uint64) uint64 {
	type gi struct {
		idx    uint64
		weight int
	}
	var gs []gi
	for g, members := range c.Groups {
		if len(members) > 0 {
			gs = append(gs, gi{groupIndex(g), len(members)})
		}
	}
	// Taking groups from the best index down, the first point at which their
	// weight exceeds half the total is the largest index a set of groups of
	// quorum weight has all reached.
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].idx > gs[j].idx })
	total, w := c.Total(), 0
	for _, x := range gs {
		w += x.weight
		if 2*w > total {
			return x.idx
		}
	}
	return 0
}

// Index returns the largest index acknowledged by a quorum of servers, given
// each server's acknowledged index: CommittedIndex over GroupIndex.
func (c Config) Index(acked func(ID) uint64) uint64 {
	return c.CommittedIndex(func(g int) uint64 { return c.GroupIndex(g, acked) })
}
