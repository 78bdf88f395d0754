package sim

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// histOp is one client operation as the history records it.
type histOp struct {
	Client  int
	Op      string
	Key     string
	Value   string
	Expect  string
	Call    int64
	Return  int64 // -1: outcome unknown
	OK      bool
	Result  string
	Done    bool
	Dropped bool // definitely never executed (no leader to send to): left out
	seq     int
	server  int
}

// client issues one operation at a time to one server, moving to another
// server after a timeout.
type client struct {
	id      int
	server  int
	seq     int
	pending *histOp
	lastVal map[string]string
}

func (s *Sim) startClients() {
	for i := 0; i < s.p.Clients; i++ {
		c := &client{id: i, server: s.rng.Intn(len(s.servers)), lastVal: map[string]string{}}
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
	key := fmt.Sprintf("k%d", s.rng.Intn(s.p.Keys))
	op := &histOp{Client: c.id, Key: key, Call: s.clk.now, Return: -1, seq: c.seq, server: c.server}
	switch r := s.rng.Intn(10); {
	case r < 3:
		op.Op = "read"
	case r < 7:
		op.Op = "write"
		op.Value = fmt.Sprintf("c%d-%d", c.id, c.seq)
	default:
		op.Op = "cas"
		op.Value = fmt.Sprintf("c%d-%d", c.id, c.seq)
		op.Expect = c.lastVal[key]
	}
	c.pending = op
	s.history = append(s.history, op)
	payload := kvOp{Client: c.id, Seq: c.seq, Op: op.Op, Key: key, Value: op.Value, Expect: op.Expect}.encode()
	sv := s.members()[c.server]
	s.clk.after(s.net.minUS, func() {
		if !sv.up || sv.paused {
			return // lost: the client will time out
		}
		if err := sv.node.Propose(payload); err == gpaxos.ErrNoLeader {
			if c.pending == op {
				op.Dropped = true
				c.pending = nil
				c.server = s.pickServer()
				s.clk.after(s.p.TickUS, func() { s.issue(c) })
			}
			return
		}
		s.kick(sv)
	})
	s.clk.after(s.p.ClientTimeoutUS, func() {
		if c.pending == op {
			c.pending = nil // outcome unknown
			c.server = s.pickServer()
			s.issue(c)
		}
	})
}

// clientReply delivers the result of an applied operation to its client, if
// the applying server is the one the client asked and it still waits.
func (s *Sim) clientReply(sv *server, op kvOp, res kvResult, z gpaxos.Zxid) {
	if op.Client < 0 || op.Client >= len(s.clients) {
		return
	}
	c := s.clients[op.Client]
	h := c.pending
	if h == nil || h.seq != op.Seq || h.server != sv.idx {
		return
	}
	s.clk.after(s.net.minUS, func() {
		if c.pending != h {
			return
		}
		h.Return, h.Done, h.OK, h.Result = s.clk.now, true, res.OK, res.Value
		c.pending = nil
		switch h.Op {
		case "read":
			c.lastVal[h.Key] = res.Value
		case "write":
			c.lastVal[h.Key] = h.Value
			s.chk.acked = append(s.chk.acked, z)
		case "cas":
			if res.OK {
				c.lastVal[h.Key] = h.Value
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
