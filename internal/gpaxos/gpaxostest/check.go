package gpaxostest

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// The checks below run after every Ready and every round of deliveries, so
// that a script fails on a broken invariant even when its transcript is
// rewritten: a transcript records what happened, the checks say it was
// allowed. They are the simulator's invariants (docs/protocol.md §8) that
// one host can see.

// violation records a broken invariant; Handle prints it and fails the test.
func (env *Env) violation(format string, args ...any) {
	env.errs = append(env.errs, fmt.Sprintf(format, args...))
}

// check verifies the invariants of every live node's current state: Current
// never passes Promised, the commit point never passes the log, and at most
// one server leads an epoch, and one server coordinates a group at a group
// epoch won under one configuration.
func (env *Env) check() {
	for _, nd := range env.live() {
		st := nd.n.Status()
		hs := st.HardState
		if hs.Current > hs.Promised {
			env.violation("node %d: Current %d > Promised %d", nd.id, hs.Current, hs.Promised)
		}
		if hs.Commit > st.Last {
			env.violation("node %d: Commit %v > last %v", nd.id, hs.Commit, st.Last)
		}
		if st.Leader {
			if l, ok := env.leaders[hs.Promised]; ok && l != nd.id {
				env.violation("epoch %d led by %d and %d", hs.Promised, l, nd.id)
			}
			env.leaders[hs.Promised] = nd.id
		}
		if st.Coordinator {
			k := [3]uint64{uint64(st.Group), hs.GroupEpoch, st.ElectedUnder}
			if c, ok := env.coords[k]; ok && c != nd.id {
				env.violation("group %d's group epoch %d won by %d and %d under one configuration", st.Group, hs.GroupEpoch, c, nd.id)
			}
			env.coords[k] = nd.id
		}
	}
}

// checkHardState verifies that durable epochs never go back.
func (env *Env) checkHardState(id ID, old, hs gpaxos.HardState) {
	if hs.Promised < old.Promised {
		env.violation("node %d: durable Promised went back from %d to %d", id, old.Promised, hs.Promised)
	}
	if hs.Current < old.Current {
		env.violation("node %d: durable Current went back from %d to %d", id, old.Current, hs.Current)
	}
	if hs.GroupEpoch < old.GroupEpoch {
		env.violation("node %d: durable GroupEpoch went back from %d to %d", id, old.GroupEpoch, hs.GroupEpoch)
	}
}

// checkApply verifies agreement: a node applies entries in increasing zxid
// order, and every node applies the same entry at a zxid, which a quorum
// of the configuration in force there holds durably when it is first
// applied (a node may apply an entry still on its way to its own disk,
// never one that only memory holds).
func (env *Env) checkApply(nd *node, e gpaxos.Entry) {
	if e.Zxid <= nd.app.applied {
		env.violation("node %d: applied %v after %v", nd.id, e.Zxid, nd.app.applied)
	}
	if c, ok := env.committed[e.Zxid]; ok {
		if c.Type != e.Type || string(c.Data) != string(e.Data) {
			env.violation("node %d: applied %s at %v, another node applied %s", nd.id,
				env.formatEntry(e), e.Zxid, env.formatEntry(c))
		}
		return
	}
	env.committed[e.Zxid] = e
	if !nd.n.ConfigAt(e.Zxid).IsQuorum(func(id ID) bool { return env.holds(id, e) }) {
		env.violation("node %d: applied %s at %v, which no quorum holds durably", nd.id, env.formatEntry(e), e.Zxid)
	}
}

// holds reports whether server id's storage holds e (or a snapshot past it).
func (env *Env) holds(id ID, e gpaxos.Entry) bool {
	nd := env.node(id)
	if nd == nil {
		return false
	}
	s := &nd.store
	if s.snap != nil && s.snap.Index >= e.Zxid {
		return true
	}
	for _, x := range s.ents {
		if x.Zxid == e.Zxid {
			return x.Type == e.Type && string(x.Data) == string(e.Data)
		}
	}
	return false
}
