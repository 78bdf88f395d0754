package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/replica"
)

// This file serves the membership part of package adminapi on the admin
// (metrics) port: GET /membership, POST /join and POST /leave. Joins and
// departures are ordered by the global leader; another server answers 421
// with the leader's admin address, which adminapi's client follows. Each
// becomes one or more single-server configuration changes through the log
// (gpaxos.ProposeConfChange), made one at a time, each waited for until it
// commits.

// membershipInfo describes the committed membership.
func (s *Server) membershipInfo() adminapi.Membership {
	m, voters, _ := s.membership.get()
	return s.infoOf(m, voters)
}

// infoOf describes membership m with voting configuration voters.
func (s *Server) infoOf(m members.Membership, voters quorum.Config) adminapi.Membership {
	e := &s.cfg.Ensemble
	info := adminapi.Membership{ID: s.cfg.ServerID, Groups: voters.Groups, Forest: m.History(), Shape: e.Shape,
		TickMs: e.Tick.Milliseconds(), ElectionTicks: e.ElectionTicks, Cluster: s.clusterName}
	info.Shape.Nodes = len(m.Members)
	if rp, ok := s.pipe.(*replicated); ok {
		info.Leader = rp.rep.Status().Leader
	}
	for _, x := range m.Members {
		info.Members = append(info.Members, adminapi.MemberStatus{Member: x, Group: voters.GroupOf(x.ID)})
	}
	return info
}

// leaderAdmin returns the admin address of the leader, when known.
func (s *Server) leaderAdmin() (string, bool) {
	rp, ok := s.pipe.(*replicated)
	if !ok {
		return "", false
	}
	m, _, _ := s.membership.get()
	x, ok := m.Member(rp.rep.Status().Leader)
	return x.Admin, ok && x.Admin != ""
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// notLeader answers a change asked of a server that does not lead.
func (s *Server) notLeader(w http.ResponseWriter) {
	addr, _ := s.leaderAdmin()
	writeJSON(w, http.StatusMisdirectedRequest, adminapi.NotLeader{Error: "not the leader", LeaderAdmin: addr})
}

func (s *Server) membershipHandler(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Replicated() {
		http.Error(w, "not an ensemble member", http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, s.membershipInfo())
}

func (s *Server) joinHandler(w http.ResponseWriter, r *http.Request) {
	var req adminapi.JoinRequest
	if !s.decodeChange(w, r, &req) {
		return
	}
	if req.Peer == "" {
		http.Error(w, "peer address required", http.StatusBadRequest)
		return
	}
	info, err := s.join(r.Context(), req.Member, req.Prepare)
	if s.changeFailed(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) leaveHandler(w http.ResponseWriter, r *http.Request) {
	var req adminapi.LeaveRequest
	if !s.decodeChange(w, r, &req) {
		return
	}
	if s.changeFailed(w, s.leave(r.Context(), req.ID)) {
		return
	}
	writeJSON(w, http.StatusOK, s.membershipInfo())
}

func (s *Server) decodeChange(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return false
	}
	rp, ok := s.pipe.(*replicated)
	if !ok {
		http.Error(w, "not an ensemble member", http.StatusNotFound)
		return false
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(v); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return false
	}
	if rp.rep.Status().Role != replica.RoleLeader {
		s.notLeader(w)
		return false
	}
	return true
}

func (s *Server) changeFailed(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, gpaxos.ErrNotLeader):
		s.notLeader(w)
	case errors.Is(err, members.ErrRefused), errors.Is(err, gpaxos.ErrBadConfChange):
		http.Error(w, err.Error(), http.StatusConflict)
	default:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
	s.log.Warn("membership change failed", "err", err)
	return true
}

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

// runSteps proposes each step and waits for it to commit before the next.
func (s *Server) runSteps(ctx context.Context, steps []members.Step) error {
	if len(steps) == 0 {
		return nil
	}
	rp, ok := s.pipe.(*replicated)
	if !ok {
		return errors.New("not an ensemble member")
	}
	timeout := 20 * s.cfg.Ensemble.Tick * time.Duration(s.cfg.Ensemble.ElectionTicks)
	for _, st := range steps {
		deadline := time.Now().Add(timeout)
		for {
			err := rp.rep.ProposeConfChange(st.Change, st.After.Encode())
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
