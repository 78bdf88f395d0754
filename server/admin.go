package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/forest"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/replica"
)

// This file serves membership changes on the admin (metrics) port:
//
//	GET  /membership   the ensemble as this server knows it (JSON)
//	POST /join         {"id":N,"peer":"h:p","client":"h:p","admin":"h:p"}
//	POST /leave        {"id":N}
//
// Joins and departures are ordered by the global leader; another server
// answers 421 with the leader's admin address, which `giraffe server --join`
// and `giraffe cluster` follow. Each becomes one or more single-server
// configuration changes through the log (gpaxos.ProposeConfChange), made
// one at a time, each waited for until it commits.

// MembershipInfo is the answer of GET /membership and of a join: enough for
// a joining server to start.
type MembershipInfo struct {
	ID            int64         `json:"id"` // the answering server (a join: the joined server)
	Leader        int64         `json:"leader"`
	Members       []MemberInfo  `json:"members"`
	Groups        [][]quorum.ID `json:"groups"` // the committed voting configuration
	Forest        string        `json:"forest"` // joins (+id) and departures (-id), oldest first
	Trees         int           `json:"trees"`
	Children      int           `json:"children"`
	Classic       bool          `json:"classic"`
	TickMs        int64         `json:"tick_ms"`
	ElectionTicks int           `json:"election_ticks"`
	Cluster       string        `json:"cluster"` // the name peers present in their handshake
	// Pending, in a joined server's record (SaveJoined), says that the
	// change adding it has not been confirmed yet: the server asks for it
	// again when it starts.
	Pending bool `json:"pending,omitempty"`
}

// MemberInfo is one member in MembershipInfo.
type MemberInfo struct {
	ID     int64  `json:"id"`
	Peer   string `json:"peer"`
	Client string `json:"client,omitempty"`
	Admin  string `json:"admin,omitempty"`
	Group  int    `json:"group"` // -1 while not a voter
	// Prepare, in a join request, asks only what the join would make
	// (the server's id and group, the voting configuration and the
	// membership) without proposing it: the joining server starts with
	// that, then asks again without Prepare (see Server.join).
	Prepare bool `json:"prepare,omitempty"`
}

// memberState is the server's committed membership and voting
// configuration, changed by the applier.
type memberState struct {
	mu      sync.Mutex
	m       membership
	voters  quorum.Config
	changed chan struct{} // closed and replaced on every change
	// reconfigMu makes a leader handle one join or departure at a time.
	reconfigMu sync.Mutex
}

func (ms *memberState) set(m membership, voters quorum.Config) {
	ms.mu.Lock()
	ms.m, ms.voters = m, voters
	if ms.changed != nil {
		close(ms.changed)
	}
	ms.changed = make(chan struct{})
	ms.mu.Unlock()
}

func (ms *memberState) get() (membership, quorum.Config, <-chan struct{}) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.changed == nil {
		ms.changed = make(chan struct{})
	}
	return ms.m.clone(), ms.voters, ms.changed
}

// membershipInfo describes the committed membership.
func (s *Server) membershipInfo() MembershipInfo {
	m, voters, _ := s.members.get()
	return s.infoOf(m, voters)
}

// infoOf describes membership m with voting configuration voters.
func (s *Server) infoOf(m membership, voters quorum.Config) MembershipInfo {
	e := &s.cfg.Ensemble
	info := MembershipInfo{ID: s.cfg.ServerID, Groups: voters.Groups, Trees: e.Trees, Children: e.Children,
		Classic: e.Classic, TickMs: e.Tick.Milliseconds(), ElectionTicks: e.ElectionTicks, Cluster: s.clusterName}
	if rp, ok := s.pipe.(*replicated); ok {
		info.Leader = int64(rp.rep.Status().Leader)
	}
	for _, x := range m.Members {
		info.Members = append(info.Members, MemberInfo{ID: x.ID, Peer: x.Peer, Client: x.Client, Admin: x.Admin,
			Group: groupOf(voters, x.ID)})
	}
	for i, c := range m.Changes {
		if i > 0 {
			info.Forest += " "
		}
		sign := "+"
		if c.Op == forest.OpLeave {
			sign = "-"
		}
		info.Forest += fmt.Sprintf("%s%d", sign, c.Server)
	}
	return info
}

// leaderAdmin returns the admin address of the leader, when known.
func (s *Server) leaderAdmin() (string, bool) {
	rp, ok := s.pipe.(*replicated)
	if !ok {
		return "", false
	}
	m, _, _ := s.members.get()
	x, ok := m.member(int64(rp.rep.Status().Leader))
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
	writeJSON(w, http.StatusMisdirectedRequest, map[string]string{"error": "not the leader", "leader_admin": addr})
}

func (s *Server) membershipHandler(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Replicated() {
		http.Error(w, "not an ensemble member", http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, s.membershipInfo())
}

func (s *Server) joinHandler(w http.ResponseWriter, r *http.Request) {
	var req MemberInfo
	if !s.decodeChange(w, r, &req) {
		return
	}
	if req.Peer == "" {
		http.Error(w, "peer address required", http.StatusBadRequest)
		return
	}
	info, err := s.join(r.Context(), member{ID: req.ID, Peer: req.Peer, Client: req.Client, Admin: req.Admin}, req.Prepare)
	if s.changeFailed(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) leaveHandler(w http.ResponseWriter, r *http.Request) {
	var req MemberInfo
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

// errBadChange marks a change that cannot be made (answered 409).
var errBadChange = errors.New("membership change refused")

func (s *Server) changeFailed(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, gpaxos.ErrNotLeader):
		s.notLeader(w)
	case errors.Is(err, errBadChange), errors.Is(err, gpaxos.ErrBadConfChange):
		http.Error(w, err.Error(), http.StatusConflict)
	default:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
	s.log.Warn("membership change failed", "err", err)
	return true
}

// confStep is one configuration change and the membership it leaves.
type confStep struct {
	cc   gpaxos.ConfChange
	m    membership
	done func(quorum.Config) bool // reports whether the committed configuration reflects the step
}

// join adds x (a fresh id when x.ID is 0) to the group the forest gives it
// and returns the membership that results, with ID set to x's id.
//
// A join has two steps. With prepare it only answers what the change would
// make; the joining server starts with that configuration (as a learner
// until its log holds one: gpaxos.Config.Joining) and then asks for the
// change itself. It must be running before the change commits: a group
// whose members cannot form the new majority without it (one member
// growing to two, or a member down) commits the change only with its
// acknowledgment.
func (s *Server) join(ctx context.Context, x member, prepare bool) (MembershipInfo, error) {
	s.members.reconfigMu.Lock()
	defer s.members.reconfigMu.Unlock()
	cur, voters, _ := s.members.get()
	if x.ID == 0 {
		for _, y := range cur.Members {
			x.ID = max(x.ID, y.ID)
		}
		for _, g := range voters.Groups {
			for _, id := range g {
				x.ID = max(x.ID, int64(id))
			}
		}
		x.ID++
	}
	if y, ok := cur.member(x.ID); ok {
		if y.Peer == x.Peer && groupOf(voters, x.ID) >= 0 {
			info := s.membershipInfo()
			info.ID = x.ID
			return info, nil // joined already (a retried request)
		}
		return MembershipInfo{}, fmt.Errorf("%w: server %d is already a member at %s", errBadChange, x.ID, y.Peer)
	}
	next := cur.clone()
	next.Members = append(next.Members, x)
	slices.SortFunc(next.Members, func(a, b member) int { return int(a.ID - b.ID) })
	next.Changes = append(next.Changes, forest.Change{Op: forest.OpJoin, Server: forest.ServerID(x.ID), Addr: fmt.Sprint(x.ID)})
	group := 0
	if !s.cfg.Ensemble.Classic {
		f, err := next.forest(&s.cfg.Ensemble)
		if err != nil {
			return MembershipInfo{}, err
		}
		c, _ := f.Color(forest.ServerID(x.ID))
		group = int(c)
	}
	id := x.ID
	cc := gpaxos.ConfChange{Op: gpaxos.ConfAddServer, Server: gpaxos.ID(id), Group: group}
	if prepare {
		nextVoters, err := gpaxos.ApplyConfChange(voters, cc)
		if err != nil {
			return MembershipInfo{}, fmt.Errorf("%w: %v", errBadChange, err)
		}
		info := s.infoOf(next, nextVoters)
		info.ID = id
		return info, nil
	}
	err := s.runSteps(ctx, []confStep{{
		cc:   cc,
		m:    next,
		done: func(v quorum.Config) bool { return groupOf(v, id) == group },
	}})
	info := s.membershipInfo()
	info.ID = id
	return info, err
}

// leave removes id; when the forest moves another server to another group
// to keep the groups balanced (a recolor), that server is removed and
// added back in its new group first.
func (s *Server) leave(ctx context.Context, id int64) error {
	s.members.reconfigMu.Lock()
	defer s.members.reconfigMu.Unlock()
	cur, voters, _ := s.members.get()
	if _, ok := cur.member(id); !ok || groupOf(voters, id) < 0 {
		return fmt.Errorf("%w: server %d is not a member", errBadChange, id)
	}
	if voters.Total() <= 1 {
		return fmt.Errorf("%w: server %d is the last member", errBadChange, id)
	}
	next := cur.clone()
	next.Members = slices.DeleteFunc(next.Members, func(x member) bool { return x.ID == id })
	next.Changes = append(next.Changes, forest.Change{Op: forest.OpLeave, Server: forest.ServerID(id)})
	var steps []confStep
	if !s.cfg.Ensemble.Classic {
		f, err := cur.forest(&s.cfg.Ensemble)
		if err != nil {
			return err
		}
		u, err := f.Leave(forest.ServerID(id))
		if err != nil {
			return err
		}
		for _, rc := range u.Recolors {
			y, to := int64(rc.Server), int(rc.To)
			steps = append(steps,
				confStep{cc: gpaxos.ConfChange{Op: gpaxos.ConfRemoveServer, Server: gpaxos.ID(y)}, m: cur,
					done: func(v quorum.Config) bool { return groupOf(v, y) < 0 }},
				confStep{cc: gpaxos.ConfChange{Op: gpaxos.ConfAddServer, Server: gpaxos.ID(y), Group: to}, m: cur,
					done: func(v quorum.Config) bool { return groupOf(v, y) == to }})
		}
	}
	steps = append(steps, confStep{cc: gpaxos.ConfChange{Op: gpaxos.ConfRemoveServer, Server: gpaxos.ID(id)}, m: next,
		done: func(v quorum.Config) bool { return groupOf(v, id) < 0 }})
	return s.runSteps(ctx, steps)
}

// runSteps proposes each step and waits for it to commit before the next.
func (s *Server) runSteps(ctx context.Context, steps []confStep) error {
	rp, ok := s.pipe.(*replicated)
	if !ok {
		return errors.New("not an ensemble member")
	}
	timeout := 20 * s.cfg.Ensemble.Tick * time.Duration(s.cfg.Ensemble.ElectionTicks)
	for _, st := range steps {
		deadline := time.Now().Add(timeout)
		for {
			err := rp.rep.ProposeConfChange(st.cc, st.m.encode())
			if err == nil {
				break
			}
			if !errors.Is(err, gpaxos.ErrConfChangePending) || time.Now().After(deadline) {
				return fmt.Errorf("%v: %w", st.cc, err)
			}
			select {
			case <-time.After(s.cfg.Ensemble.Tick):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		s.log.Info("configuration change proposed", "change", st.cc.String())
		for {
			_, v, changed := s.members.get()
			if st.done(v) {
				break
			}
			select {
			case <-changed:
			case <-time.After(time.Until(deadline)):
				return fmt.Errorf("%v: not committed within %v", st.cc, timeout)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}
