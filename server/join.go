package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/nsmap"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// Join says how a server joins a running ensemble (giraffe server --join,
// embed.Join).
type Join struct {
	// Admin is the admin port's address, host:port, of any member. A
	// server whose data directory records an earlier join needs none.
	Admin string
	// ID is the server id to ask for; 0 lets the leader pick the next
	// free one.
	ID ID
	// PeerPort is this server's Group Paxos port. The server's peer and
	// client addresses are on the host of Config.ClientAddr, 127.0.0.1
	// when that is empty or 0.0.0.0; its admin address on Config.AdminAddr
	// (the client host when that listens on every interface). A client
	// port of 0 (chosen when listening) is not published to the ensemble.
	// Config.AdminPort and Config.AdminTokenFile must be set: the server
	// presents the ensemble's token to join, and the ensemble forwards
	// changes to its admin port when it leads.
	PeerPort int
	// AwaitReconfig starts the server as a learner with the configuration
	// the join would make, without asking for the change: a client's
	// ZooKeeper reconfig -add makes it (ZooKeeper's way of adding a
	// server that already runs). The server logs the server string to
	// add and marks its join done once the change has committed.
	AwaitReconfig bool
}

// joinTimeout bounds each of a join's two requests to the ensemble.
const joinTimeout = 60 * time.Second

// HasJoined reports whether dataDir records a join, so that a server that
// joined an ensemble restarts as a member without being told again
// (StartJoining with a zero Join).
func HasJoined(dataDir string) bool {
	if dataDir == "" {
		return false
	}
	_, ok, err := adminapi.LoadJoinRecord(dataDir)
	return ok || err != nil
}

// StartJoining starts a server that joins the running ensemble j.Admin
// names, or restarts one that joined before (its data directory records
// the join). The join has two steps, because the server must run before
// the change that adds it commits: a group that cannot form its new
// majority without it (one member growing to two, or a member down)
// commits the change only with its acknowledgment. So it first asks the
// leader what the join would make (this server's id, its group and the
// configuration with it), records that in the data directory, marked
// pending, and starts with it, as a learner; then it asks for the change
// itself and waits for it to commit. A later start reuses the record,
// and asks again while it is pending.
func StartJoining(ctx context.Context, cfg Config, j Join, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if err := cfg.loadAdminToken(); err != nil {
		return nil, err
	}
	admin := adminapi.Client{Token: cfg.adminToken}
	rec, err := prepareJoin(ctx, &cfg, j, admin)
	if err != nil {
		return nil, err
	}
	s, err := New(cfg, logger)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	if !rec.Pending {
		return s, nil
	}
	if j.AwaitReconfig {
		s.awaitReconfig(rec)
		return s, nil
	}
	if err := finishJoin(ctx, cfg.DataDir, rec, admin, j.Admin); err != nil {
		s.Close()
		return nil, err
	}
	logger.Info("joined the ensemble", "id", rec.ID)
	return s, nil
}

// prepareJoin makes cfg the configuration of the joining server: from the
// data directory's record, or, on the first start, from the leader's
// answer to a prepared join, which it records.
func prepareJoin(ctx context.Context, cfg *Config, j Join, admin adminapi.Client) (adminapi.JoinRecord, error) {
	if cfg.DataDir == "" {
		return adminapi.JoinRecord{}, errors.New("joining an ensemble needs a data directory")
	}
	rec, ok, err := adminapi.LoadJoinRecord(cfg.DataDir)
	if err != nil {
		return rec, err
	}
	if !ok {
		if j.Admin == "" {
			return rec, errors.New("joining an ensemble needs the admin address of a member")
		}
		if j.PeerPort <= 0 || cfg.AdminPort <= 0 {
			return rec, errors.New("joining an ensemble needs a peer port and an admin port")
		}
		if admin.Token == "" {
			return rec, errors.New("joining an ensemble needs the ensemble's admin token (giraffe.adminTokenFile)")
		}
		host := cfg.ClientAddr
		if host == "" || host == "0.0.0.0" {
			host = "127.0.0.1"
		}
		adminHost := cfg.adminHost()
		if ip := net.ParseIP(adminHost); ip != nil && ip.IsUnspecified() {
			adminHost = host
		}
		self := members.Member{ID: j.ID, Peer: net.JoinHostPort(host, fmt.Sprint(j.PeerPort)),
			Admin: net.JoinHostPort(adminHost, fmt.Sprint(cfg.AdminPort))}
		if cfg.ClientPort > 0 {
			self.Client = net.JoinHostPort(host, fmt.Sprint(cfg.ClientPort))
		}
		rctx, cancel := context.WithTimeout(ctx, joinTimeout)
		defer cancel()
		m, err := admin.Join(rctx, []string{j.Admin}, adminapi.JoinRequest{Member: self, Prepare: true})
		if err != nil {
			return rec, err
		}
		if err := sameNamespaces(cfg.Namespaces, m.Namespaces); err != nil {
			return rec, err
		}
		rec = adminapi.JoinRecord{Membership: m, Pending: true}
		if err := adminapi.SaveJoinRecord(cfg.DataDir, rec); err != nil {
			return rec, err
		}
	}
	cfg.ServerID = rec.ID
	cfg.Ensemble = joinedEnsemble(rec.Membership)
	return rec, nil
}

// finishJoin asks, as client cl, for the change that adds the server,
// through addr or, when that is empty (a restart), any other member the
// record names, and marks the record done once it has committed.
func finishJoin(ctx context.Context, dataDir string, rec adminapi.JoinRecord, cl adminapi.Client, addr string) error {
	var self members.Member
	for _, m := range rec.Members {
		if m.ID == rec.ID {
			self = m.Member
		} else if addr == "" && m.Admin != "" {
			addr = m.Admin
		}
	}
	rctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	if _, err := cl.Join(rctx, []string{addr}, adminapi.JoinRequest{Member: self}); err != nil {
		return fmt.Errorf("joining as server %d: %w (the data directory keeps the request: start again to retry)", rec.ID, err)
	}
	rec.Pending = false
	return adminapi.SaveJoinRecord(dataDir, rec)
}

// awaitReconfig logs the reconfig that adds this server, a learner of
// the ensemble rec records, and marks the record done once that change
// has committed.
func (s *Server) awaitReconfig(rec adminapi.JoinRecord) {
	var self members.Member
	for _, m := range rec.Members {
		if m.ID == rec.ID {
			self = m.Member
		}
	}
	spec := self.JoiningSpec()
	s.log.Info("waiting for a reconfig that adds this server", "id", rec.ID, "reconfig", "reconfig -add "+spec)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			_, _, changed := s.membership.get()
			if s.inCommittedConfig(rec.ID) {
				rec.Pending = false
				if err := adminapi.SaveJoinRecord(s.cfg.DataDir, rec); err != nil {
					s.log.Error("recording the join", "err", err)
				}
				s.log.Info("joined the ensemble", "id", rec.ID)
				return
			}
			select {
			case <-changed:
			case <-s.done:
				return
			}
		}
	}()
}

// inCommittedConfig reports whether the replicated /zookeeper/config
// lists server id: a learner starts with a membership that names it
// before the change that adds it has committed.
func (s *Server) inCommittedConfig(id ID) bool {
	s.treeMu.RLock()
	data := s.tree.Config()
	s.treeMu.RUnlock()
	m, err := members.Decode(data)
	if err != nil {
		return false
	}
	_, ok := m.Member(id)
	return ok
}

// joinedEnsemble returns the ensemble configuration a server that joined
// as m.ID starts with: the members, shape and timers the ensemble
// answered, and the voting configuration with the server in it.
func joinedEnsemble(m adminapi.Membership) Ensemble {
	e := Ensemble{Shape: m.Shape(), Tick: time.Duration(m.TickMs) * time.Millisecond, ElectionTicks: m.ElectionTicks,
		ClusterName: m.Cluster}
	for _, x := range m.Members {
		e.Members = append(e.Members, x.Member)
	}
	v := quorum.Config{Groups: m.Groups}
	e.Joined = &v
	return e
}

// sameNamespaces checks, before a server asks to join, that it declares
// the namespace table the ensemble declares (theirs, in
// /zookeeper/namespaces' JSON, empty for none): its peers would refuse it
// otherwise, after the change that adds it had committed.
func sameNamespaces(ours nsmap.Table, theirs string) error {
	other := nsmap.Table{}
	if theirs != "" {
		var err error
		if other, err = nsmap.Decode([]byte(theirs)); err != nil {
			return fmt.Errorf("the ensemble's namespace table: %w", err)
		}
	}
	if !ours.Equal(other) {
		return fmt.Errorf("this server declares namespaces %s, the ensemble %s: declare the same giraffe.namespace lines to join it",
			ours, other)
	}
	return nil
}
