package sim

import (
	"math/rand"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// reconfigLoop asks the leader, every ReconfigEveryUS (±50%) of the safety
// phase, to remove a voter or to add one of the spare servers, which starts
// with an empty disk and the configuration that adds it as soon as the
// change is proposed, as a joining server does (gpaxos.Config.Joining). Removed servers keep running (as learners, and as
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
	cur := l.host.Voters()
	var spare *server
	for _, sv := range s.spares {
		if sv.host == nil {
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
	next, err := gpaxos.ApplyConfChange(cur, cc)
	if err != nil || !survivesLoss(next, s.recoveringNow()) {
		// The servers recovering from lost state count as down until
		// registered again, which needs a quorum without them: a change
		// that leaves none (removing a server of the group they need)
		// stops the ensemble for good, as removing a live server while
		// a quorum's worth are down would.
		return
	}
	if err := l.host.ProposeConfChange(cc, nil); err != nil {
		return
	}
	s.note("reconfigure: %v", cc)
	s.kick(l)
	if spare != nil && cc.Op == gpaxos.ConfAddServer {
		s.startSpare(spare, next)
	}
}

// startSpare starts a spare server, empty, with the configuration that
// adds it, before that change commits: a change that grows a group of one
// to two commits only with the new server's acknowledgment. Until its log
// holds a configuration it never campaigns, so if the change is dropped it
// stays idle (rather than leading under a configuration nobody else has),
// and it is started at once because the change adding it may not commit
// without it.
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
