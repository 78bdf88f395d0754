package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/replica"
)

// This file serves the admin (metrics) port: Prometheus metrics on
// /metrics, and package adminapi's endpoints: the membership (GET
// /membership, POST /join and /leave; the changes themselves are made in
// reconfig.go) and fault injection (/faults, faults.go). Joins and
// departures are ordered by the global leader; another server answers 421
// with the leader's admin address, which adminapi's client follows.

// adminHandler routes the admin port's requests.
func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.metrics.handler())
	mux.HandleFunc(adminapi.PathFaults, s.faultsHandler)
	mux.HandleFunc(adminapi.PathMembership, s.membershipHandler)
	mux.HandleFunc(adminapi.PathJoin, s.joinHandler)
	mux.HandleFunc(adminapi.PathLeave, s.leaveHandler)
	return mux
}

// membershipInfo describes the committed membership.
func (s *Server) membershipInfo() adminapi.Membership {
	m, voters, _ := s.membership.get()
	return s.infoOf(m, voters)
}

// infoOf describes membership m with voting configuration voters.
func (s *Server) infoOf(m members.Membership, voters quorum.Config) adminapi.Membership {
	e := &s.cfg.Ensemble
	info := adminapi.Membership{ID: s.cfg.ServerID, Groups: voters.Groups, Forest: m.History(),
		Trees: e.Shape.Trees, Children: e.Shape.Children, Classic: e.Shape.Classic,
		TickMs: e.Tick.Milliseconds(), ElectionTicks: e.ElectionTicks, Cluster: s.clusterName}
	if s.cfg.Namespaces.Len() > 0 {
		info.Namespaces = string(s.cfg.Namespaces.Encode())
	}
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
