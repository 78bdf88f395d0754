package members

import (
	"errors"
	"fmt"
	"slices"

	"github.com/giraffe-coord/giraffe/internal/forest"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// ErrRefused marks a join or departure that cannot be made in the current
// membership (a server already a member elsewhere, one that is not a
// member, the last member).
var ErrRefused = errors.New("membership change refused")

// Step is one single-server configuration change and the membership the
// ensemble has once it commits (the change carries it, encoded, as its
// context).
type Step struct {
	Change gpaxos.ConfChange
	After  Membership
}

// Done reports whether the committed voting configuration v reflects the
// step: the server added votes in its group, or the server removed no
// longer votes.
func (st Step) Done(v quorum.Config) bool {
	if st.Change.Op == gpaxos.ConfAddServer {
		return v.GroupOf(st.Change.Server) == st.Change.Group
	}
	return v.GroupOf(st.Change.Server) < 0
}

// Plan is a join or departure as the changes that make it, made one at a
// time, each committed before the next.
type Plan struct {
	// Server is the server that joins or leaves (a join asked without an
	// id gets the next free one).
	Server ID
	// Steps is empty when there is nothing to do: the server has joined
	// already (a retried request).
	Steps []Step
}

// Voters returns the voting configuration once every step of p has been
// applied to cur.
func (p Plan) Voters(cur quorum.Config) (quorum.Config, error) {
	for _, st := range p.Steps {
		var err error
		if cur, err = gpaxos.ApplyConfChange(cur, st.Change); err != nil {
			return cur, fmt.Errorf("%w: %v", ErrRefused, err)
		}
	}
	return cur, nil
}

// PlanJoin plans adding x, with the next free id when x.ID is 0, to an
// ensemble of shape s whose membership is cur and whose committed voting
// configuration is voters: one change, into the group the forest gives x
// (group 0 when the ensemble is one group).
func PlanJoin(s Shape, cur Membership, voters quorum.Config, x Member) (Plan, error) {
	if x.ID == 0 {
		for _, y := range cur.Members {
			x.ID = max(x.ID, y.ID)
		}
		for _, g := range voters.Groups {
			for _, id := range g {
				x.ID = max(x.ID, id)
			}
		}
		x.ID++
	}
	p := Plan{Server: x.ID}
	if y, ok := cur.Member(x.ID); ok {
		if y.Peer == x.Peer && voters.GroupOf(x.ID) >= 0 {
			return p, nil
		}
		return p, fmt.Errorf("%w: server %d is already a member at %s", ErrRefused, x.ID, y.Peer)
	}
	next := cur.Clone()
	next.Members = append(next.Members, x)
	sortMembers(next.Members)
	next.Changes = append(next.Changes, joinChange(x.ID))
	group := 0
	if !s.OneGroup() {
		f, err := next.Forest(s)
		if err != nil {
			return p, err
		}
		c, _ := f.Color(forest.ServerID(x.ID))
		group = int(c)
	}
	p.Steps = []Step{{Change: gpaxos.ConfChange{Op: gpaxos.ConfAddServer, Server: x.ID, Group: group}, After: next}}
	return p, nil
}

// PlanLeave plans removing server id. When the forest moves another server
// to another group to keep the groups balanced (a recolor), that server is
// removed and added back in its new group first, each a change of its own
// (one server per committed change keeps every two consecutive
// configurations' quorums intersecting).
func PlanLeave(s Shape, cur Membership, voters quorum.Config, id ID) (Plan, error) {
	p := Plan{Server: id}
	if _, ok := cur.Member(id); !ok || voters.GroupOf(id) < 0 {
		return p, fmt.Errorf("%w: server %d is not a member", ErrRefused, id)
	}
	if voters.Total() <= 1 {
		return p, fmt.Errorf("%w: server %d is the last member", ErrRefused, id)
	}
	next := cur.Clone()
	next.Members = slices.DeleteFunc(next.Members, func(x Member) bool { return x.ID == id })
	next.Changes = append(next.Changes, leaveChange(id))
	if !s.OneGroup() {
		f, err := cur.Forest(s)
		if err != nil {
			return p, err
		}
		u, err := f.Leave(forest.ServerID(id))
		if err != nil {
			return p, err
		}
		for _, rc := range u.Recolors {
			y := ID(rc.Server)
			p.Steps = append(p.Steps,
				Step{Change: gpaxos.ConfChange{Op: gpaxos.ConfRemoveServer, Server: y}, After: cur},
				Step{Change: gpaxos.ConfChange{Op: gpaxos.ConfAddServer, Server: y, Group: int(rc.To)}, After: cur})
		}
	}
	p.Steps = append(p.Steps, Step{Change: gpaxos.ConfChange{Op: gpaxos.ConfRemoveServer, Server: id}, After: next})
	return p, nil
}
