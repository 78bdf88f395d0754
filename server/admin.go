package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/console"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/replica"
)

// This file serves the server's two HTTP ports. The metrics port is
// read-only: Prometheus metrics on /metrics, the committed membership on
// /membership, ZooKeeper's AdminServer commands that only read
// (commands.go) and the namespaces' status on /namespaces (nsstatus.go),
// to GET and HEAD; anything else is refused (405). The
// admin port serves package adminapi's endpoints: the membership (GET
// /membership, POST /join and /leave; the changes themselves are made in
// reconfig.go) and fault injection (/faults, faults.go, only with
// Config.FaultInjection). Every admin request must carry the admin token
// (401 otherwise), but the web console's pages and reads under /ui/
// (console.go), and without a token the admin port does not open, so
// nothing that changes the ensemble is reachable unauthenticated. Joins
// and departures are ordered by the global leader; another server answers
// 421 with the leader's admin address, which adminapi's client follows.

// metricsHandler routes the metrics port's requests.
func (s *Server) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.metrics.handler())
	mux.HandleFunc(adminapi.PathMembership, s.membershipHandler)
	s.handleCommands(mux, false)
	mux.HandleFunc(adminapi.PathNamespaces, s.namespacesHandler)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.log.Warn("metrics port: request refused", "reason", "read-only port",
				"method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the metrics port is read-only: membership changes and fault injection are on the admin port", http.StatusMethodNotAllowed)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// adminHandler routes the admin port's requests, once authenticated.
func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(adminapi.PathFaults, s.faultsHandler)
	mux.HandleFunc(adminapi.PathMembership, s.membershipHandler)
	mux.HandleFunc(adminapi.PathJoin, s.joinHandler)
	mux.HandleFunc(adminapi.PathLeave, s.leaveHandler)
	s.handleCommands(mux, true)
	mux.HandleFunc(adminapi.PathReconfig, s.reconfigHandler)
	ui := s.consoleHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, console.Prefix) {
			ui.ServeHTTP(w, r) // reads are open; its writes check the token
			return
		}
		if err := adminapi.CheckToken(r, s.cfg.adminToken); err != nil {
			s.log.Warn("admin port: request refused", "reason", err.Error(),
				"method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="giraffe-admin"`)
			http.Error(w, "admin token required: "+err.Error(), http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// startHTTP starts the metrics port and the admin port, as configured.
func (s *Server) startHTTP() error {
	if s.cfg.MetricsPort > 0 {
		ln, sv, err := s.serveHTTP(s.cfg.ClientAddr, s.cfg.MetricsPort, s.metricsHandler())
		if err != nil {
			return err
		}
		s.metricsLn, s.metricsSv = ln, sv
	}
	switch {
	case s.cfg.AdminPort > 0 && s.cfg.adminToken != "":
		ln, sv, err := s.serveHTTP(s.cfg.adminHost(), s.cfg.AdminPort, s.adminHandler())
		if err != nil {
			return err
		}
		s.adminLn, s.adminSv = ln, sv
		s.log.Info("admin port open", "addr", ln.Addr().String(), "faultInjection", s.cfg.FaultInjection)
	case s.cfg.AdminPort > 0:
		s.log.Info("admin port closed: giraffe.adminPort is set but giraffe.adminTokenFile is not, " +
			"and admin requests are served only with a token")
	case s.cfg.Replicated():
		s.log.Info("admin port closed: giraffe.adminPort is not set, so this server takes no membership changes")
	}
	if s.cfg.FaultInjection {
		s.log.Warn("fault injection is on (giraffe.faultInjection=true): for tests only")
	}
	return nil
}

// serveHTTP listens on host:port and serves h there until Close.
func (s *Server) serveHTTP(host string, port int, h http.Handler) (net.Listener, *http.Server, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
	if err != nil {
		return nil, nil, err
	}
	sv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); sv.Serve(ln) }()
	return ln, sv, nil
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

// stopHTTP stops the metrics and admin ports, whichever are open.
func (s *Server) stopHTTP() {
	s.liveWatches.stop() // else the shutdown would wait for the streams
	for _, sv := range []*http.Server{s.metricsSv, s.adminSv} {
		if sv != nil {
			sv.Shutdown(context.Background())
		}
	}
}
