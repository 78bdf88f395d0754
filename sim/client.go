package sim

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// histOp is one client operation as the history records it.
type histOp struct {
	Client int
	Op     string
	Key    string
	Value  string
	Expect int32 // cas: the version expected
	Call   int64
	Return int64 // -1: outcome unknown
	OK     bool
	Result string // read: the value seen
	// Version is the znode version the answer reported: read, the one
	// seen; write and a cas that succeeded, the one made.
	Version int32
	Done    bool
	seq     int
	// segment is the client's connection the operation ran on
	// (client.segment); early says it was answered early, at earlyZxid
	// (weak.go).
	segment   int
	early     bool
	earlyZxid gpaxos.Zxid
}

// client issues one operation at a time to one server, moving to another
// server after a timeout or when the server fails the operation.
type client struct {
	id      int
	server  int
	seq     int
	pending *histOp
	// lastVer is the version of each register the client last saw, which
	// its next cas expects.
	lastVer map[string]int32
	// lastZxid is the newest state the client has seen: the zxid of its
	// last answer through the log, or the applied zxid a local read was
	// served at (a ZooKeeper client's lastZxidSeen).
	lastZxid gpaxos.Zxid
	// segment counts the client's connections: a new one each time it
	// gives up on a server or its server closes its connection.
	segment int
}

// pendingReq is a client operation a server proposed and has not yet
// answered, filed under the stream and sequence number of its proposal,
// as server/replicated.go files its requests.
type pendingReq struct {
	c           *client
	op          *histOp
	stream, seq uint64
	// early: answered early with earlyOut at earlyZxid (weak.go); its
	// commit is checked against that answer, not answered again.
	early     bool
	earlyOut  regOutput
	earlyZxid gpaxos.Zxid
}

func (s *Sim) startClients() {
	for i := 0; i < s.p.Clients; i++ {
		c := &client{id: i, server: s.rng.Intn(len(s.servers)), lastVer: map[string]int32{}}
		s.clients = append(s.clients, c)
		s.clk.after(s.rng.Int63n(20_000), func() { s.issue(c) })
	}
}

// issue starts c's next operation.
func (s *Sim) issue(c *client) {
	if s.clk.now >= s.stopClientsAt || s.failed() {
		return
	}
	c.seq++
	key := keyName(s.rng.Intn(s.p.Keys))
	op := &histOp{Client: c.id, Key: key, Call: s.clk.now, Return: -1, seq: c.seq, segment: c.segment}
	switch r := s.rng.Intn(10); {
	case r < 3:
		op.Op = "read"
	case r < 7:
		op.Op = "write"
		op.Value = fmt.Sprintf("c%d-%d", c.id, c.seq)
	default:
		op.Op = "cas"
		op.Value = fmt.Sprintf("c%d-%d", c.id, c.seq)
		op.Expect = c.lastVer[key]
	}
	if op.Op == "read" && s.p.LocalReads && s.rng.Intn(2) == 0 {
		op.Op = "lread"
	}
	c.pending = op
	s.history = append(s.history, op)
	if op.Op == "lread" {
		s.localRead(c, op)
		return
	}
	rop := regOp{Client: c.id, Seq: c.seq, Op: op.Op, Key: key, Value: op.Value, Expect: op.Expect}
	sv := s.members()[c.server]
	s.clk.after(s.net.minUS, func() {
		if !sv.up || sv.paused {
			return // lost: the client will time out
		}
		sv.host.Propose(rop.body(s.clk.now/1000), func(stream, seq uint64) {
			sv.pending = append(sv.pending, &pendingReq{c: c, op: op, stream: stream, seq: seq})
		})
		s.kick(sv)
	})
	s.clk.after(s.p.ClientTimeoutUS, func() {
		if c.pending == op {
			s.giveUp(c)
		}
	})
}

// giveUp leaves c's operation with an unknown outcome and moves c to
// another server for its next one.
func (s *Sim) giveUp(c *client) {
	c.pending = nil
	c.segment++
	c.server = s.pickServer()
	s.issue(c)
}

// complete answers sv's request for committed entry cm, its own, with
// what sv's tree returned (server/replicated.go's complete): the request
// at the head of sv's pending list, if the entry carries its numbers;
// anything else is a proposal of an abandoned stream.
func (s *Sim) complete(sv *server, cm *replica.Committed, out regOutput) {
	if len(sv.pending) == 0 {
		return
	}
	it := sv.pending[0]
	if it.stream != cm.Stream || it.seq != cm.Seq {
		return
	}
	sv.pending = sv.pending[1:]
	if it.early {
		s.committedEarly(sv, it, cm, out)
		return
	}
	s.reply(it.c, it.op, out, cm.Zxid, false)
}

// resent files sv's requests whose proposals moved to a new stream under
// their new numbers (server/replicated.go's resent).
func (sv *server) resent(moves []replica.Resend) {
	i := 0
	for _, it := range sv.pending {
		for i < len(moves) && (moves[i].OldStream != it.stream || moves[i].OldSeq != it.seq) {
			i++
		}
		if i == len(moves) {
			return
		}
		it.stream, it.seq = moves[i].NewStream, moves[i].NewSeq
		i++
	}
}

// abandon fails sv's requests of streams older than stream: their outcome
// is unknown, as for a ZooKeeper client whose connection closes, and
// their clients move on. A client with a request answered early among
// them loses its connection (server/replicated.go's abandon): its other
// requests here fail too, whatever their stream.
func (s *Sim) abandon(sv *server, stream uint64) {
	if s.probing {
		sv.probeSent = false // the probe may have been in the abandoned stream
		s.probe(sv)
	}
	closed := map[*client]bool{}
	var order []*client // closed, in a deterministic order
	for _, it := range sv.pending {
		if it.stream < stream && it.early && !closed[it.c] && !s.p.WeakKeepConnection {
			closed[it.c] = true
			order = append(order, it.c)
		}
	}
	keep := sv.pending[:0]
	for _, it := range sv.pending {
		if it.stream >= stream && !closed[it.c] {
			keep = append(keep, it)
			continue
		}
		if it.c.pending == it.op {
			s.clk.after(s.net.minUS, func() {
				if it.c.pending == it.op {
					s.giveUp(it.c)
				}
			})
		}
	}
	clear(sv.pending[len(keep):])
	sv.pending = keep
	for _, c := range order {
		if op := c.pending; op != nil && s.members()[c.server] == sv {
			s.clk.after(s.net.minUS, func() {
				if c.pending == op {
					s.giveUp(c)
				}
			})
		}
		if c.pending == nil {
			c.segment++ // between operations: the next one reconnects
		}
	}
}

// reply delivers the answer to op, one network delay later, if its client
// still waits for it; early says it is an early reply (weak.go), which
// durability does not cover.
func (s *Sim) reply(c *client, h *histOp, out regOutput, z gpaxos.Zxid, early bool) {
	s.clk.after(s.net.minUS, func() {
		if c.pending != h {
			return
		}
		h.Return, h.Done, h.OK, h.Result, h.Version = s.clk.now, true, out.OK, out.Value, out.Version
		h.early, h.earlyZxid = early, z
		c.pending = nil
		c.lastZxid = max(c.lastZxid, z)
		if out.OK {
			c.lastVer[h.Key] = out.Version
			if h.Op != "read" && !early {
				s.chk.acked = append(s.chk.acked, z)
			}
		}
		if h.Call >= s.healAt {
			s.stats.postHeal++
		}
		s.clk.after(s.rng.Int63n(5_000), func() { s.issue(c) })
	})
}

// pickServer picks the server a client moves to: any of the initial
// servers or of the spares added so far (without spares the draw is the
// one the simulator always made, so seeds replay).
func (s *Sim) pickServer() int {
	return s.rng.Intn(len(s.members()))
}

// localRead sends op, a local read, to c's server, which answers from its
// own tree once it has applied everything c has seen (server/conn.go's
// waitApplied on connect; one connection's requests are answered in
// order, so within a connection the rule holds by itself), polling each
// tick until then. A server down or paused loses the read; the client
// times out and moves on as for any operation.
func (s *Sim) localRead(c *client, op *histOp) {
	sv := s.members()[c.server]
	seen := c.lastZxid
	var try func()
	try = func() {
		if c.pending != op || s.failed() || !sv.up || sv.paused || sv.tree == nil {
			return
		}
		if sv.applied < seen && !s.p.NoReadWait {
			s.clk.after(s.p.TickUS, try)
			return
		}
		data, st, code := sv.tree.GetData(regPath(op.Key), nil)
		at := sv.applied
		s.clk.after(s.net.minUS, func() {
			if c.pending != op {
				return
			}
			if at < c.lastZxid {
				s.fail(failCorrectness, "local read: client %d read %s at server %d's state %v after it had seen %v",
					c.id, op.Key, sv.id, at, c.lastZxid)
				return
			}
			op.Return, op.Done, op.OK, op.Result, op.Version = s.clk.now, true, code == zkproto.OK, string(data), st.Version
			c.pending = nil
			c.lastZxid = at
			s.stats.localReads++
			s.clk.after(s.rng.Int63n(5_000), func() { s.issue(c) })
		})
	}
	s.clk.after(s.net.minUS, try)
	s.clk.after(s.p.ClientTimeoutUS, func() {
		if c.pending == op {
			s.giveUp(c)
		}
	})
}
