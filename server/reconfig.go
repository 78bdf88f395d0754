package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// This file makes the membership changes the admin port asks for, on the
// leader: each join or departure is planned by package members as
// single-server configuration changes, proposed through the log one at a
// time, each waited for until it commits.

// join adds x (a fresh id when x.ID is 0) to the group the forest gives it
// (members.PlanJoin) and returns the membership that results, with ID set
// to x's id.
//
// A join has two steps. With prepare it only answers what the change would
// make; the joining server starts with that configuration (as a learner
// until its log holds one: gpaxos.Config.Joining) and then asks for the
// change itself. It must be running before the change commits: a group
// whose members cannot form the new majority without it (one member
// growing to two, or a member down) commits the change only with its
// acknowledgment.
func (s *Server) join(ctx context.Context, x members.Member, prepare bool) (adminapi.Membership, error) {
	s.membership.reconfigMu.Lock()
	defer s.membership.reconfigMu.Unlock()
	cur, voters, _ := s.membership.get()
	plan, err := members.PlanJoin(s.cfg.Ensemble.Shape, cur, voters, x)
	if err != nil {
		return adminapi.Membership{}, err
	}
	if prepare && len(plan.Steps) > 0 {
		next, err := plan.Voters(voters)
		if err != nil {
			return adminapi.Membership{}, err
		}
		info := s.infoOf(plan.Steps[0].After, next)
		info.ID = plan.Server
		return info, nil
	}
	err = s.runSteps(ctx, plan.Steps)
	info := s.membershipInfo()
	info.ID = plan.Server
	return info, err
}

// leave removes id, moving another server between groups first when the
// forest says so (members.PlanLeave).
func (s *Server) leave(ctx context.Context, id members.ID) error {
	s.membership.reconfigMu.Lock()
	defer s.membership.reconfigMu.Unlock()
	cur, voters, _ := s.membership.get()
	plan, err := members.PlanLeave(s.cfg.Ensemble.Shape, cur, voters, id)
	if err != nil {
		return err
	}
	return s.runSteps(ctx, plan.Steps)
}

// errNoLiveQuorum refuses a change after which the servers in contact
// with this leader could not form a quorum (ZooKeeper's
// NEWCONFIGNOQUORUM).
var errNoLiveQuorum = errors.New("no quorum of the new configuration is in contact with the leader")

// checkLiveQuorum refuses steps after any of which the members in contact
// with this server (their touches committed within contactWindow; this
// server; a server the step adds, which runs before its change is
// proposed) could not form a quorum of the configuration. Committed, such
// a change would stop the ensemble until the missing servers came back,
// and a member that had lost its disk could then never be registered
// again: ZooKeeper refuses it too (NEWCONFIGNOQUORUM). A member only
// slowed down may still be missing right after an election: the check
// waits up to contactWindow for its touch before refusing.
func (s *Server) checkLiveQuorum(ctx context.Context, voters quorum.Config, steps []members.Step) error {
	deadline := time.Now().Add(s.contactWindow())
	for {
		err := s.liveQuorumAfter(voters, steps)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(s.cfg.Ensemble.Tick):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Server) liveQuorumAfter(voters quorum.Config, steps []members.Step) error {
	now, window := time.Now(), s.contactWindow()
	cur := voters
	for _, st := range steps {
		next, err := gpaxos.ApplyConfChange(cur, st.Change)
		if err != nil {
			return fmt.Errorf("%w: %v", members.ErrRefused, err)
		}
		live := func(id members.ID) bool {
			return id == s.cfg.ServerID || st.Change.Op == gpaxos.ConfAddServer && id == st.Change.Server ||
				s.contacts.heard(id, now, window)
		}
		if !next.IsQuorum(live) {
			var missing []members.ID
			for _, g := range next.Groups {
				for _, id := range g {
					if !live(id) {
						missing = append(missing, id)
					}
				}
			}
			return fmt.Errorf("%w: after %v, servers %v have not been heard from for %v", errNoLiveQuorum, st.Change, missing, window)
		}
		cur = next
	}
	return nil
}

// runSteps proposes each step and waits for it to commit before the next.
// It first refuses steps that no live quorum could commit
// (checkLiveQuorum).
func (s *Server) runSteps(ctx context.Context, steps []members.Step) error {
	if len(steps) == 0 {
		return nil
	}
	rp, ok := s.pipe.(*replicated)
	if !ok {
		return errors.New("not an ensemble member")
	}
	_, voters, _ := s.membership.get()
	if err := s.checkLiveQuorum(ctx, voters, steps); err != nil {
		return err
	}
	timeout := 20 * s.cfg.Ensemble.Tick * time.Duration(s.cfg.Ensemble.ElectionTicks)
	for _, st := range steps {
		deadline := time.Now().Add(timeout)
		for {
			err := rp.rep.ProposeConfChange(st.Change, encodeConfContext(time.Now().UnixMilli(), st.After.Encode()))
			if err == nil {
				break
			}
			if !errors.Is(err, gpaxos.ErrConfChangePending) || time.Now().After(deadline) {
				return fmt.Errorf("%v: %w", st.Change, err)
			}
			select {
			case <-time.After(s.cfg.Ensemble.Tick):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		s.log.Info("configuration change proposed", "change", st.Change.String())
		for {
			_, v, changed := s.membership.get()
			if st.Done(v) {
				break
			}
			select {
			case <-changed:
			case <-time.After(time.Until(deadline)):
				return fmt.Errorf("%v: not committed within %v", st.Change, timeout)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}
