package sim

import (
	"math/rand"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// reconfigLoop asks the leader, every ReconfigEveryUS (±50%) of the safety
// phase, to remove a voter or to add one of the spare servers, which starts
// with an empty disk and the configuration that added it once the change
// commits, as a joining server does. Removed servers keep running (as learners, and as
// targets of faults) and never come back: a server that leaves for good
// and fresh servers that join are how membership changes in practice, and
// a removed leader or coordinator must give up its role once the change
// commits. The changes use their own random stream, so the rest of the run
// draws what it would without them until the first change lands.
func (s *Sim) reconfigLoop(r *rand.Rand) {
	d := s.p.ReconfigEveryUS/2 + r.Int63n(s.p.ReconfigEveryUS)
	s.clk.after(d, func() {
		if s.clk.now >= s.p.SafetyUS || s.failed() {
			return
		}
		s.reconfigure(r)
		s.reconfigLoop(r)
	})
}

func (s *Sim) reconfigure(r *rand.Rand) {
	l := s.leader()
	if l == nil || l.paused {
		return
	}
	cur := l.node.Voters()
	var spare *server
	for _, sv := range s.spares {
		if sv.node == nil {
			spare = sv
			break
		}
	}
	var cc gpaxos.ConfChange
	if spare != nil && (r.Intn(2) == 0 || cur.Total() <= 3) {
		// Into the smallest group, as the forest's joins do.
		g := 0
		for k := range cur.Groups {
			if len(cur.Groups[k]) < len(cur.Groups[g]) {
				g = k
			}
		}
		cc = gpaxos.ConfChange{Op: gpaxos.ConfAddServer, Server: spare.id, Group: g}
	} else {
		if cur.Total() <= 3 {
			return
		}
		sv := s.servers[r.Intn(len(s.servers))]
		if cur.GroupOf(quorum.ID(sv.id)) < 0 {
			return
		}
		cc = gpaxos.ConfChange{Op: gpaxos.ConfRemoveServer, Server: sv.id}
	}
	if err := l.node.ProposeConfChange(cc, nil); err != nil {
		return
	}
	s.note("reconfigure: %v", cc)
	s.kick(l)
}

// configCommitted starts the spares that a newly committed configuration
// adds: as `giraffe server --join`, a joining server starts once the change
// that adds it has committed, with that configuration. (Started earlier, it
// would take itself for a member of a configuration the ensemble may still
// drop with an uncommitted entry, and could lead under it.)
func (s *Sim) configCommitted(cfg quorum.Config) {
	for _, sv := range s.spares {
		if sv.node == nil && cfg.GroupOf(quorum.ID(sv.id)) >= 0 {
			s.startSpare(sv, cfg)
		}
	}
}

// startSpare starts a spare server, empty, with the configuration that
// added it.
func (s *Sim) startSpare(sv *server, cfg quorum.Config) {
	sv.initial = &cfg
	if err := s.start(sv); err != nil {
		s.fail(failCrash, "starting spare %d: %v", sv.id, err)
		return
	}
	s.note("spare %d starts", sv.id)
	s.clk.after(s.rng.Int63n(s.p.TickUS), func() { s.tickLoop(sv) })
}

// committedVoters is the configuration of the canonical committed
// sequence's end: servers it leaves out are learners that need not keep up.
func (s *Sim) committedVoters() quorum.Config {
	if len(s.chk.config.Groups) > 0 {
		return s.chk.config
	}
	return s.voters
}

// voting reports whether sv votes in the committed configuration.
func (s *Sim) voting(sv *server) bool {
	return s.committedVoters().GroupOf(quorum.ID(sv.id)) >= 0
}
