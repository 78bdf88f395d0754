package server

import (
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/peer"
)

// newTCPTransport listens on this member's peer port. The cluster name in
// the handshake is derived from the server list, so a server started with
// another ensemble's configuration is refused instead of mixing in.
func newTCPTransport(s *Server, peers map[gpaxos.ID]string) (peerTransport, error) {
	self := s.cfg.Self()
	others := map[gpaxos.ID]string{}
	var lines []string
	for id, addr := range peers {
		lines = append(lines, fmt.Sprintf("%d=%s", id, addr))
		if id != gpaxos.ID(self.ID) {
			others[id] = addr
		}
	}
	slices.Sort(lines)
	h := fnv.New64a()
	h.Write([]byte(strings.Join(lines, ",")))
	t, err := peer.Listen(peer.Config{ID: gpaxos.ID(self.ID), Listen: self.PeerAddr, Peers: others,
		Cluster: fmt.Sprintf("giraffe-%x", h.Sum64()), Logger: s.log})
	if err != nil {
		return nil, err
	}
	s.faults = t.Faults()
	return t, nil
}

// faultsHandler serves /faults on the metrics port: GET shows the faults
// injected into this server's peer transport, POST applies a spec
// (peer.Faults.Apply: "drop ID P; delay ID D; block ID; isolate; heal").
// It exists for tests (the kernel here has no netem).
func (s *Server) faultsHandler(w http.ResponseWriter, r *http.Request) {
	if s.faults == nil {
		http.Error(w, "not an ensemble member", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
		if err == nil {
			err = s.faults.Apply(string(body))
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.log.Warn("fault injection changed", "faults", s.faults.String())
	}
	fmt.Fprintln(w, s.faults.String())
}
