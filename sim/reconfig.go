package sim

import (
	"math/rand"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// reconfigLoop asks the leader, every ReconfigEveryUS (±50%) of the safety
// phase, to remove a voter or to add a removed server back to the group it
// came from. Removed servers keep running (as learners, and as targets of
// faults): a removed leader or coordinator must give up its role once the
// change commits, and a server added back must catch up. The changes use
// their own random stream, so the rest of the run draws what it would
// without them until the first change lands.
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
	var removed []*server
	for _, sv := range s.servers {
		if cur.GroupOf(quorum.ID(sv.id)) < 0 {
			removed = append(removed, sv)
		}
	}
	var cc gpaxos.ConfChange
	if len(removed) > 0 && (r.Intn(2) == 0 || cur.Total() <= 3 || len(removed) >= max(s.p.Nodes/4, 1)) {
		sv := removed[r.Intn(len(removed))]
		cc = gpaxos.ConfChange{Op: gpaxos.ConfAddServer, Server: sv.id, Group: s.voters.GroupOf(quorum.ID(sv.id))}
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
	if err := l.node.ProposeConfChange(cc, nil); err == nil {
		s.note("reconfigure: %v", cc)
		s.kick(l)
	}
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
