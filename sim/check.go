package sim

import (
	"fmt"
	"hash/fnv"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/replica"
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
	// zxidOnly compares entries by zxid alone and trees not at all
	// (benchmarks: hashing every payload at every server would cost more
	// than the run it checks).
	zxidOnly bool
	// ops are the register operations of the canonical sequence, in its
	// order: what settles the operations whose clients never heard back.
	ops []committedOp
	// committedOps holds the operations in ops, each committed once: a
	// server proposes a client's operation once, and its host resends it
	// across lost messages and leader changes so that the log holds it
	// once (internal/replica's proposal streams).
	committedOps map[opID]opCommit
}

// opCommit is where an operation committed: its zxid and the proposal
// that carried it.
type opCommit struct {
	zxid        gpaxos.Zxid
	origin      gpaxos.ID
	stream, seq uint64
}

func (o opCommit) String() string {
	return fmt.Sprintf("%v (server %d's proposal %x.%d)", o.zxid, o.origin, o.stream, o.seq)
}

// opID names one client operation.
type opID struct{ client, seq int }

// committedOp is a register operation of the canonical sequence and the
// virtual time some server first applied it.
type committedOp struct {
	op regOp
	at int64
}

// canonRec is one entry of the canonical sequence: its zxid and the digest
// of the data tree of the first server that applied it, once applied.
type canonRec struct {
	zxid   gpaxos.Zxid
	digest uint64
}

func newChecker() *checker {
	return &checker{posOf: map[gpaxos.Zxid]int{}, content: map[gpaxos.Zxid]uint64{},
		leaders: map[gpaxos.Epoch]gpaxos.ID{}, coords: map[[3]uint64]gpaxos.ID{}, committedOps: map[opID]opCommit{}}
}

func entryHash(e gpaxos.Entry) uint64 {
	h := fnv.New64a()
	h.Write([]byte{byte(e.Type)})
	h.Write(e.Data)
	return h.Sum64()
}

// recordEntry checks that a zxid names one entry only, wherever persisted:
// one leader per epoch, and a leader never reuses a counter. Every entry a
// server applies it persisted first, so with the zxids of the canonical
// sequence this makes every server apply the same entries.
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

// applied is the agreement check, after sv applied committed entry cm and
// its tree's digest is digest: the k-th entry any server applies is the
// k-th entry of the canonical sequence, and equal zxids mean equal trees.
// op is the register operation cm carries, if any.
func (c *checker) applied(s *Sim, sv *server, cm *replica.Committed, digest uint64, op *regOp) {
	want := sv.pos + 1
	if c.zxidOnly {
		digest = 0
	}
	if want < len(c.canon) {
		switch rec := c.canon[want]; {
		case rec.zxid != cm.Zxid:
			s.fail(failCorrectness, "agreement: server %d applied %v at position %d, canonical has %v", sv.id, cm.Zxid, want, rec.zxid)
			return
		case rec.digest != digest:
			s.fail(failCorrectness, "agreement: server %d's tree after %v has digest %016x, the canonical tree %016x", sv.id, cm.Zxid, digest, rec.digest)
			return
		}
	} else {
		if len(c.canon) > 0 && c.canon[len(c.canon)-1].zxid >= cm.Zxid {
			s.fail(failCorrectness, "order: server %d applied %v after %v", sv.id, cm.Zxid, c.canon[len(c.canon)-1].zxid)
			return
		}
		c.canon = append(c.canon, canonRec{zxid: cm.Zxid, digest: digest})
		c.posOf[cm.Zxid] = want
		if op != nil {
			id := opID{op.Client, op.Seq}
			now := opCommit{zxid: cm.Zxid, origin: cm.Origin, stream: cm.Stream, seq: cm.Seq}
			if first, ok := c.committedOps[id]; ok {
				s.fail(failCorrectness, "exactly once: client %d's operation %d committed at %v and again at %v", op.Client, op.Seq, first, now)
				return
			}
			c.committedOps[id] = now
			c.ops = append(c.ops, committedOp{op: *op, at: s.clk.now})
		}
		if cm.Conf != nil {
			c.config = cm.Conf.Voters
			c.confChanges++
		}
	}
	sv.pos = want
}

// installed checks a snapshot sv installed or restarted from: its index is
// in the canonical sequence, and its tree is the canonical tree there.
func (c *checker) installed(s *Sim, sv *server, index gpaxos.Zxid, digest uint64) {
	p, ok := c.posOf[index]
	switch {
	case !ok:
		s.fail(failCorrectness, "server %d installed a snapshot at %v that no server applied", sv.id, index)
		return
	case !c.zxidOnly && c.canon[p].digest != digest:
		s.fail(failCorrectness, "agreement: server %d's snapshot at %v has digest %016x, the canonical tree %016x", sv.id, index, digest, c.canon[p].digest)
		return
	}
	sv.pos = p
}

// checkNode runs the per-step invariants on one server.
func (s *Sim) checkNode(sv *server) {
	if sv.host == nil || s.failed() {
		return
	}
	st := sv.host.Status()
	hs := st.HardState
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
