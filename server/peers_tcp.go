package server

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/transport"
)

// newTCPTransport listens on this member's peer port. The cluster name in
// the handshake is derived from the server list, so a server started with
// another ensemble's configuration is refused instead of mixing in; so is
// a server with another namespace table. With sslQuorum every link is
// mutual TLS.
func newTCPTransport(s *Server, peers map[gpaxos.ID]string) (peerTransport, error) {
	self := s.cfg.Self()
	others := map[gpaxos.ID]string{}
	var lines []string
	for id, addr := range peers {
		lines = append(lines, fmt.Sprintf("%d=%s", id, addr))
		if id != self.ID {
			others[id] = addr
		}
	}
	slices.Sort(lines)
	h := fnv.New64a()
	h.Write([]byte(strings.Join(lines, ",")))
	s.clusterName = fmt.Sprintf("giraffe-%x", h.Sum64())
	if name := s.cfg.Ensemble.ClusterName; name != "" {
		s.clusterName = name // a joined server: the name the ensemble was born with
	}
	cfg := transport.Config{ID: self.ID, ListenAddr: self.Peer, Peers: others,
		Cluster: s.clusterName, Namespaces: s.cfg.Namespaces, Logger: s.log, FaultInjection: s.cfg.FaultInjection,
		// A member cut off while servers joined knows neither them nor
		// their addresses, and its group's election may need its vote.
		AcceptUnknownPeers: true,
		// Appends carry batches, but acknowledgments and heartbeats are
		// many small messages: room for a few thousand per peer.
		QueueLen: 16384}
	if s.quorumTLS != nil {
		cfg.TLS = s.quorumTLS // sslQuorum
	}
	t, err := transport.New(cfg)
	if err != nil {
		return nil, err
	}
	s.faults = t.Faults()
	return sendAdapter{t}, nil
}

// sendAdapter drops the transport's "queued or dropped" result, which the
// replica does not need (the protocol retransmits).
type sendAdapter struct{ *transport.Transport }

func (a sendAdapter) Send(m gpaxos.Message) { a.Transport.Send(m) }
