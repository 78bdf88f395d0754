package sim

import (
	"hash/fnv"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// checker watches the run from outside the protocol: it sees what servers
// persist and apply and what clients are told, never the protocol's own
// claims.
type checker struct {
	canon   []canonRec          // the one committed sequence every server must follow
	posOf   map[gpaxos.Zxid]int // zxid → position in canon
	content map[gpaxos.Zxid]uint64
	leaders map[gpaxos.Epoch]gpaxos.ID
	coords  map[[3]uint64]gpaxos.ID
	acked   []gpaxos.Zxid // zxids of writes a client was told succeeded
	// config is the configuration set by the last configuration entry of
	// the canonical sequence (none yet: empty).
	config      quorum.Config
	confChanges int
	// zxidOnly compares entries by zxid alone (benchmarks: hashing every
	// payload at every server would cost more than the run it checks).
	zxidOnly bool
	// ops are the register operations of the canonical sequence, in its
	// order: what settles the operations whose clients never heard back.
	ops []committedOp
}

// committedOp is a register operation of the canonical sequence and the
// virtual time some server first applied it.
type committedOp struct {
	op kvOp
	at int64
}

type canonRec struct {
	zxid gpaxos.Zxid
	hash uint64
}

func newChecker() *checker {
	return &checker{posOf: map[gpaxos.Zxid]int{}, content: map[gpaxos.Zxid]uint64{},
		leaders: map[gpaxos.Epoch]gpaxos.ID{}, coords: map[[3]uint64]gpaxos.ID{}}
}

func entryHash(e gpaxos.Entry) uint64 {
	h := fnv.New64a()
	h.Write([]byte{byte(e.Type)})
	h.Write(e.Data)
	return h.Sum64()
}

// recordEntry checks that a zxid names one entry only, wherever persisted:
// one leader per epoch, and a leader never reuses a counter.
func (c *checker) recordEntry(s *Sim, e gpaxos.Entry) {
	if c.zxidOnly {
		return
	}
	h := entryHash(e)
	if old, ok := c.content[e.Zxid]; ok && old != h {
		s.fail(failCorrectness, "zxid %v names two different entries", e.Zxid)
		return
	}
	c.content[e.Zxid] = h
}

// applied is the agreement check: the k-th entry any server applies is the
// k-th entry of the canonical sequence.
func (c *checker) applied(s *Sim, sv *server, e gpaxos.Entry) {
	want := sv.pos + 1
	rec := canonRec{zxid: e.Zxid}
	if !c.zxidOnly {
		rec.hash = entryHash(e)
	}
	if want < len(c.canon) {
		if c.canon[want] != rec {
			s.fail(failCorrectness, "agreement: server %d applied %v at position %d, canonical has %v", sv.id, e.Zxid, want, c.canon[want].zxid)
			return
		}
	} else {
		if len(c.canon) > 0 && c.canon[len(c.canon)-1].zxid >= e.Zxid {
			s.fail(failCorrectness, "order: server %d applied %v after %v", sv.id, e.Zxid, c.canon[len(c.canon)-1].zxid)
			return
		}
		c.canon = append(c.canon, rec)
		c.posOf[e.Zxid] = want
		if e.Type == gpaxos.EntryNormal && !c.zxidOnly {
			if op, ok := decodeOp(e.Data); ok {
				c.ops = append(c.ops, committedOp{op: op, at: s.clk.now})
			}
		}
		if e.Type == gpaxos.EntryConfChange {
			if cfg, _, err := gpaxos.DecodeConfEntry(e.Data); err == nil {
				c.config = cfg
				c.confChanges++
			}
		}
	}
	sv.pos = want
}

// checkNode runs the per-step invariants on one server.
func (s *Sim) checkNode(sv *server) {
	if sv.node == nil || s.failed() {
		return
	}
	st := sv.node.Status()
	hs := st.HardState
	if sv.disk.recovering && !st.Recovering {
		sv.disk.recovering = false // production rewrites its identity (replica.maybeRecovered)
	}
	switch {
	case hs.Current > hs.Promised:
		s.fail(failCorrectness, "invariant: server %d follows epoch %d beyond its promise %d", sv.id, hs.Current, hs.Promised)
	case hs.Commit > st.Last:
		s.fail(failCorrectness, "invariant: server %d commit %v beyond its log %v", sv.id, hs.Commit, st.Last)
	case st.Applied > st.Last:
		s.fail(failCorrectness, "invariant: server %d applied %v beyond its log %v", sv.id, st.Applied, st.Last)
	}
	if st.Leader {
		if hs.Promised != hs.Current || hs.Leader != sv.id {
			s.fail(failCorrectness, "invariant: leader %d has hard state %+v", sv.id, hs)
		}
		if other, ok := s.chk.leaders[hs.Promised]; ok && other != sv.id {
			s.fail(failCorrectness, "invariant: servers %d and %d both lead epoch %d", other, sv.id, hs.Promised)
		}
		s.chk.leaders[hs.Promised] = sv.id
	}
	if st.Coordinator {
		// One coordinator per group epoch won under one configuration: its
		// majorities intersect. Won under configurations two changes apart
		// (a server restarting from a log that misses both) two can
		// coexist, and keep coexisting when both later adopt the same one;
		// that is safe because the leader counts a group's point only under
		// its own configuration, the point states durable acceptances
		// whoever counts them, and candidates count promisers themselves
		// (docs/protocol.md §10).
		k := [3]uint64{uint64(st.Group), hs.GroupEpoch, st.ElectedUnder}
		if other, ok := s.chk.coords[k]; ok && other != sv.id {
			s.fail(failCorrectness, "invariant: servers %d and %d both won group %d's group epoch %d under one configuration", other, sv.id, st.Group, hs.GroupEpoch)
		}
		s.chk.coords[k] = sv.id
	}
}

// checkDurability: every write a client was told succeeded is in the
// canonical sequence and has been applied by every server at the end.
func (s *Sim) checkDurability() {
	for _, z := range s.chk.acked {
		p, ok := s.chk.posOf[z]
		if !ok {
			s.fail(failCorrectness, "durability: acknowledged write %v is not in the committed sequence", z)
			return
		}
		for _, sv := range s.members() {
			if sv.up && sv.pos < p && s.voting(sv) {
				s.fail(failCorrectness, "durability: server %d ends without acknowledged write %v", sv.id, z)
				return
			}
		}
	}
}
