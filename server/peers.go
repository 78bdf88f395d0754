package server

import (
	"fmt"
	"io"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/replica"
)

// peerTransport is the replica's transport plus a way to shut it down.
type peerTransport interface {
	replica.Transport
	io.Closer
}

// newPeerTransport makes the server-to-server transport. Tests of this
// package swap it for an in-process one; servers use TCP.
var newPeerTransport = func(s *Server, peers map[gpaxos.ID]string) (peerTransport, error) {
	return newTCPTransport(s, peers)
}

// openReplica opens this member's replica (log, snapshots and hard state
// under dataDir/replica) and its transport.
func openReplica(s *Server) (*replicated, error) {
	e := &s.cfg.Ensemble
	voters, err := e.Voters()
	if err != nil {
		return nil, err
	}
	static := members.Static(e.Members)
	tr, err := newPeerTransport(s, static.PeerAddrs(members.None))
	if err != nil {
		return nil, fmt.Errorf("peer transport: %w", err)
	}
	s.membership.set(static, voters)
	cfg := replica.Config{
		ID: s.cfg.ServerID, Voters: voters, Joining: e.Joined != nil, Topology: e.Shape.Topology(),
		Dir: s.cfg.ReplicaDir(), Tick: e.Tick, HeartbeatTicks: 2, ElectionTicks: e.ElectionTicks,
		NoSync: !s.cfg.ForceSync, SnapRetain: s.cfg.SnapRetainCount, Transport: tr, Logger: s.log,
		// The serving guard closes a client's connection once this server
		// has shown no quorum contact for a third of the client's session
		// timeout (serving.go): until then a leader change is a delay to
		// the client, not a lost connection.
		SettleTimeout: s.longestBound(),
		// A server being added must be reachable as soon as the change is
		// appended: its coordinator relays to it before the change commits.
		OnStatus: func(prev, cur replica.Status) {
			s.noteStatus(prev, cur)
			s.noteRole(cur)
		},
		OnConfig: func(_ quorum.Config, context []byte) {
			_, membership := decodeConfContext(context)
			s.learnAddresses(tr, membership)
		},
		OnSync:           s.metrics.observeSync,
		LogWritten:       &s.metrics.logWritten,
		OnLeaderReceived: s.leaderReceived,
	}
	// Weak writes answered early (weak_ensemble.go): the weak leader needs
	// the replica, which needs its hook first.
	var weak *weakLeader
	if s.shortCircuit() {
		weak = newWeakLeader(nil)
		cfg.OnLeaderAppend, cfg.AcceptEarly = weak.hear, true
	}
	if weakModeOf(&s.cfg) == WeakDynamicFsync {
		weak.gated = true
		cfg.SkipSync = func(body []byte) bool { return weakBody(s.cfg.Namespaces, body) }
	}
	rep, err := replica.Open(cfg)
	if err != nil {
		tr.Close()
		return nil, err
	}
	rp := newReplicated(s, rep)
	rp.transport = tr
	if weak != nil {
		weak.r, rp.weak = rp, weak
	}
	s.log.Info("ensemble member", "id", s.cfg.ServerID, "servers", len(e.Members), "group", voters.GroupOf(s.cfg.ServerID),
		"groups", len(voters.Groups), "classic", e.Shape.Classic)
	return rp, nil
}

// peerSetter is a transport whose address book can change (the TCP one).
type peerSetter interface {
	SetPeers(map[gpaxos.ID]string) error
}

// learnAddresses adds the members named in an encoded membership to the
// transport's address book. Addresses are only added: a server leaving
// keeps being reachable until it stops, which does no harm.
func (s *Server) learnAddresses(tr any, encoded []byte) {
	ps, ok := tr.(peerSetter)
	if !ok || len(encoded) == 0 {
		return
	}
	m, err := members.Decode(encoded)
	if err != nil {
		s.log.Error("undecodable membership", "err", err)
		return
	}
	book := m.PeerAddrs(s.cfg.ServerID)
	if cur, ok := tr.(interface{ Peers() map[gpaxos.ID]string }); ok {
		for id, addr := range cur.Peers() {
			if _, ok := book[id]; !ok {
				book[id] = addr
			}
		}
	}
	if err := ps.SetPeers(book); err != nil {
		s.log.Error("updating peer addresses", "err", err)
	}
}
