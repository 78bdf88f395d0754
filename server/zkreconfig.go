package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// This file serves ZooKeeper's reconfig (opcode 16) on Giraffe's
// single-server configuration changes. The member a client reaches
// decides what needs no ensemble state: reconfigEnabled, the
// authorization (a super user, or WRITE in /zookeeper/config's ACL, as
// ZooKeeper 3.5+; skipACL), and the one change the request asks
// (members.ParseZKReconfig; several servers in one request are refused,
// never applied in parts). It hands the change to the leader, directly
// when it leads, otherwise through the leader's admin port with the
// ensemble's admin token. The leader takes one reconfig (or admin
// join/leave) at a time (RECONFIGINPROGRESS otherwise), checks the
// configuration version the client requires (BADVERSION) and makes the
// change through the log as the admin port's /join and /leave do
// (reconfig.go), so every replica applies it at the same place.

// reconfigAnswerUnknown, as a ReconfigAnswer code, says that the change
// may or may not commit (the leader lost its leadership, or the change did
// not commit in time): the member closes the client's connection, as a
// ZooKeeper server does when its leader fails under a request, and the
// client treats the reconfig as of unknown outcome.
const reconfigAnswerUnknown = zkproto.ErrConnectionLoss

// reconfig serves a client's reconfig. It runs in the connection's reader,
// so the connection's later requests wait behind it, as they wait behind
// any write in ZooKeeper.
func (c *conn) reconfig(xid zkproto.Xid, r *zkproto.ReconfigRequest) {
	s := c.s
	answer := func(code zkproto.Code) {
		c.ordered(func() { c.reply(xid, s.pipe.lastZxid(), code, nil) })
	}
	logRefused := func(why string, args ...any) {
		s.log.Warn("reconfig refused: "+why, append([]any{"session", sessionHex(c.sessionID()),
			"joining", r.JoiningServers, "leaving", r.LeavingServers, "members", r.NewMembers}, args...)...)
	}
	if !s.cfg.ReconfigEnabled {
		logRefused("reconfigEnabled is false")
		answer(zkproto.ErrReconfigDisabled)
		return
	}
	if _, ok := s.pipe.(*replicated); !ok {
		// As ZooKeeper: a standalone server has no ensemble to change.
		logRefused("a standalone server")
		answer(zkproto.ErrUnimplemented)
		return
	}
	s.treeMu.RLock()
	_, _, list := s.tree.ConfigNode()
	s.treeMu.RUnlock()
	if s.cfg.SkipACL {
		s.log.Warn("skipACL is set: reconfig skips its ACL check", "session", sessionHex(c.sessionID()))
	} else if !acl.Check(list, zkproto.PermWrite, c.authIDs()) {
		logRefused("neither a super user nor WRITE in /zookeeper/config's ACL")
		answer(zkproto.ErrNoAuth)
		return
	}
	cur, _, _ := s.membership.get()
	ch, err := members.ParseZKReconfig(cur, r.JoiningServers, r.LeavingServers, r.NewMembers)
	if err != nil {
		logRefused(err.Error())
		answer(zkproto.ErrBadArguments)
		return
	}
	req := adminapi.ReconfigRequest{Leave: ch.Leave, ConfigID: r.CurConfigID}
	if ch.Join.ID != members.None {
		req.Join = &ch.Join
	}
	// Bounded so that the client, whose requests wait behind this one, is
	// answered well within its session timeout.
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout/2)
	defer cancel()
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	ans := s.askReconfig(ctx, req)
	code := zkproto.Code(ans.Code)
	s.log.Info("reconfig", "session", sessionHex(c.sessionID()), "join", ch.Join.ID, "leave", ch.Leave,
		"configId", fmt.Sprintf("%x", r.CurConfigID), "result", code.String(), "why", ans.Error)
	switch code {
	case zkproto.OK:
	case reconfigAnswerUnknown:
		c.close("reconfig of unknown outcome: " + ans.Error)
		return
	default:
		answer(code)
		return
	}
	// The change has committed; a marker through the log orders the reply
	// after it here too, so the answer is this replica's /zookeeper/config
	// with the change.
	c.enqueueProposal(&proposal{sync: true, applied: func(txn.Result, *txn.Entry) {
		data, stat, _ := s.tree.ConfigNode()
		c.reply(xid, s.pipe.lastZxid(), zkproto.OK, &zkproto.GetDataResponse{Data: data, Stat: stat})
	}})
}

// askReconfig has the leader make req: this server when it leads,
// otherwise the leader through its admin port.
func (s *Server) askReconfig(ctx context.Context, req adminapi.ReconfigRequest) adminapi.ReconfigAnswer {
	ans, notLeader := s.reconfigure(ctx, req)
	if !notLeader {
		return ans
	}
	if s.cfg.adminToken == "" {
		return adminapi.ReconfigAnswer{Code: int32(zkproto.ErrSystemError),
			Error: "this member does not lead and has no admin token (giraffe.adminTokenFile) to ask the leader"}
	}
	var admins []string
	if a, ok := s.leaderAdmin(); ok {
		admins = append(admins, a)
	}
	m, _, _ := s.membership.get()
	for _, x := range m.Members {
		if x.Admin != "" && x.ID != s.cfg.ServerID {
			admins = append(admins, x.Admin)
		}
	}
	if len(admins) == 0 {
		return adminapi.ReconfigAnswer{Code: int32(zkproto.ErrSystemError), Error: "no member's admin address is known"}
	}
	ans, err := adminapi.Client{Token: s.cfg.adminToken}.Reconfig(ctx, admins, req)
	if err != nil {
		// The leader may have taken the change: its outcome is unknown.
		return adminapi.ReconfigAnswer{Code: int32(reconfigAnswerUnknown), Error: err.Error()}
	}
	return ans
}

// reconfigure makes req if this server leads; notLeader says it does not
// (nothing was done).
func (s *Server) reconfigure(ctx context.Context, req adminapi.ReconfigRequest) (ans adminapi.ReconfigAnswer, notLeader bool) {
	rp, ok := s.pipe.(*replicated)
	if !ok {
		return adminapi.ReconfigAnswer{Code: int32(zkproto.ErrUnimplemented)}, false
	}
	if rp.rep.Status().Role != replica.RoleLeader {
		return ans, true
	}
	refuse := func(code zkproto.Code, format string, args ...any) (adminapi.ReconfigAnswer, bool) {
		return adminapi.ReconfigAnswer{Code: int32(code), Error: fmt.Sprintf(format, args...)}, false
	}
	if !s.membership.reconfigMu.TryLock() {
		return refuse(zkproto.ErrReconfigInProgress, "another configuration change is in progress")
	}
	defer s.membership.reconfigMu.Unlock()
	s.treeMu.RLock()
	data, _, _ := s.tree.ConfigNode()
	s.treeMu.RUnlock()
	if v := configVersion(data); req.ConfigID != -1 && req.ConfigID != v {
		return refuse(zkproto.ErrBadVersion, "the configuration is at version %x, not %x", v, req.ConfigID)
	}
	cur, voters, _ := s.membership.get()
	var plan members.Plan
	var err error
	if req.Join != nil {
		for _, x := range cur.Members {
			if x.ID != req.Join.ID && (x.Peer == req.Join.Peer || x.Client != "" && x.Client == req.Join.Client) {
				return refuse(zkproto.ErrBadArguments, "server %d already uses %s or %s", x.ID, x.Peer, x.Client)
			}
		}
		plan, err = members.PlanJoin(s.cfg.Ensemble.Shape, cur, voters, *req.Join)
	} else {
		if _, ok := cur.Member(req.Leave); ok && voters.Total() <= 2 {
			// ZooKeeper's rule (with standaloneEnabled, its default).
			return refuse(zkproto.ErrBadArguments, "the new configuration must include at least 2 servers")
		}
		plan, err = members.PlanLeave(s.cfg.Ensemble.Shape, cur, voters, req.Leave)
	}
	if err == nil {
		err = s.runSteps(ctx, plan.Steps)
	}
	switch {
	case err == nil:
		return adminapi.ReconfigAnswer{Code: int32(zkproto.OK)}, false
	case errors.Is(err, members.ErrRefused), errors.Is(err, gpaxos.ErrBadConfChange):
		return refuse(zkproto.ErrBadArguments, "%v", err)
	case errors.Is(err, errNoLiveQuorum):
		return refuse(zkproto.ErrNewConfigNoQuorum, "%v", err)
	case errors.Is(err, gpaxos.ErrConfChangePending):
		return refuse(zkproto.ErrReconfigInProgress, "%v", err)
	case errors.Is(err, gpaxos.ErrNotLeader) && !s.stepDone(plan.Steps[0]):
		// Refused at the first step: nothing was proposed.
		return ans, true
	default:
		return refuse(reconfigAnswerUnknown, "%v", err)
	}
}

// stepDone reports whether st's change is in the committed voting
// configuration.
func (s *Server) stepDone(st members.Step) bool {
	_, v, _ := s.membership.get()
	return st.Done(v)
}

// configVersion is the version of /zookeeper/config's data: its
// version=<hex> line, the zxid of the change that wrote it; 0 while the
// node is empty (the configuration of zoo.cfg).
func configVersion(data []byte) int64 {
	for _, line := range strings.Split(string(data), "\n") {
		if val, ok := strings.CutPrefix(strings.TrimSpace(line), "version="); ok {
			v, _ := strconv.ParseUint(val, 16, 64)
			return int64(v)
		}
	}
	return 0
}

// reconfigHandler serves POST /reconfig on the admin port: a reconfig
// forwarded by the member the client reached.
func (s *Server) reconfigHandler(w http.ResponseWriter, r *http.Request) {
	var req adminapi.ReconfigRequest
	if !s.decodeChange(w, r, &req) {
		return
	}
	if (req.Join == nil) == (req.Leave == members.None) {
		http.Error(w, "one server to add or to remove", http.StatusBadRequest)
		return
	}
	ans, notLeader := s.reconfigure(r.Context(), req)
	if notLeader {
		s.notLeader(w)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}
