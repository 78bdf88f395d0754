package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/forest"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// Peer is one member of an ensemble as zoo.cfg's server.N lines give it.
type Peer struct {
	ID int64
	// PeerAddr is host:port of the server-to-server (Group Paxos) port.
	PeerAddr string
	// ClientAddr is host:port of the client port, when the line names it.
	ClientAddr string
	// AdminAddr is host:port of the server's metrics/admin HTTP port
	// (giraffe.admin.N), where joins and departures are asked for.
	AdminAddr string
}

// Ensemble configures replication. With no Peers the server is standalone.
type Ensemble struct {
	Peers []Peer
	// Trees and Children shape the forest: Trees groups, each relaying
	// down a tree of fan-out Children. Classic (or Trees <= 1) is one group
	// with a star, a leader-centric protocol like Zab.
	Trees, Children int
	Classic         bool
	// Tick is the protocol tick; heartbeats go every 2 ticks and a silent
	// coordinator or leader is suspected after ElectionTicks.
	Tick          time.Duration
	ElectionTicks int
	// Joined, when set, is the voting configuration this server was given
	// when it joined a running ensemble (giraffe server --join): its log
	// starts empty, and the configuration that admitted it is where it
	// starts from. Servers of the initial ensemble derive theirs from the
	// server lines (Voters).
	Joined *quorum.Config
	// ClusterName, when set, is the name peers present in their handshake
	// (a joined server takes the ensemble's); otherwise it is derived from
	// the server lines.
	ClusterName string
}

// Replicated reports whether the configuration describes an ensemble.
func (c *Config) Replicated() bool { return len(c.Ensemble.Peers) > 0 }

// setEnsemble handles the ensemble keys of zoo.cfg: server.N lines in
// ZooKeeper's format (server.1=host:peerPort[:electionPort][;[clientHost:]clientPort];
// Giraffe uses one peer port and ignores the second) and giraffe.* keys.
func (c *Config) setEnsemble(key, val string) (bool, error) {
	if rest, ok := strings.CutPrefix(key, "giraffe.admin."); ok {
		id, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return true, fmt.Errorf("bad server id in %s", key)
		}
		c.pendingAdmin = append(c.pendingAdmin, Peer{ID: id, AdminAddr: val})
		return true, nil
	}
	if rest, ok := strings.CutPrefix(key, "server."); ok {
		id, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || id <= 0 || id > 255 {
			return true, fmt.Errorf("server id must be in [1,255]")
		}
		p, err := parsePeer(id, val)
		if err != nil {
			return true, err
		}
		c.Ensemble.Peers = append(c.Ensemble.Peers, p)
		return true, nil
	}
	var err error
	switch key {
	case "giraffe.trees":
		c.Ensemble.Trees, err = strconv.Atoi(val)
	case "giraffe.children":
		c.Ensemble.Children, err = strconv.Atoi(val)
	case "giraffe.classic":
		c.Ensemble.Classic, err = strconv.ParseBool(val)
	case "giraffe.tickMs":
		var n int
		n, err = strconv.Atoi(val)
		c.Ensemble.Tick = time.Duration(n) * time.Millisecond
	case "giraffe.electionTicks":
		c.Ensemble.ElectionTicks, err = strconv.Atoi(val)
	default:
		return false, nil
	}
	return true, err
}

func parsePeer(id int64, val string) (Peer, error) {
	p := Peer{ID: id}
	addr, client, hasClient := strings.Cut(val, ";")
	parts := strings.Split(addr, ":")
	if len(parts) < 2 {
		return p, fmt.Errorf("expected host:peerPort, got %q", val)
	}
	if _, err := strconv.Atoi(parts[1]); err != nil {
		return p, fmt.Errorf("bad peer port %q", parts[1])
	}
	p.PeerAddr = net.JoinHostPort(parts[0], parts[1])
	if hasClient {
		if !strings.Contains(client, ":") {
			client = net.JoinHostPort(parts[0], client)
		}
		p.ClientAddr = client
	}
	return p, nil
}

// readMyID reads dataDir/myid as ZooKeeper does, when serverId is not set.
func (c *Config) readMyID() error {
	if len(c.Ensemble.Peers) == 1 {
		// As ZooKeeper with standaloneEnabled (its default): a single
		// server line is a standalone server.
		c.Ensemble.Peers = nil
	}
	if c.ServerID != 0 || !c.Replicated() {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.DataDir, "myid"))
	if err != nil {
		return fmt.Errorf("ensemble member needs serverId or %s: %w", filepath.Join(c.DataDir, "myid"), err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return fmt.Errorf("myid: %w", err)
	}
	c.ServerID = n
	return nil
}

func (c *Config) validateEnsemble() error {
	for _, a := range c.pendingAdmin {
		for i := range c.Ensemble.Peers {
			if c.Ensemble.Peers[i].ID == a.ID {
				c.Ensemble.Peers[i].AdminAddr = a.AdminAddr
			}
		}
	}
	c.pendingAdmin = nil
	if !c.Replicated() {
		return nil
	}
	seen := map[int64]bool{}
	self := false
	for _, p := range c.Ensemble.Peers {
		if seen[p.ID] {
			return fmt.Errorf("server.%d given twice", p.ID)
		}
		seen[p.ID] = true
		self = self || p.ID == c.ServerID
	}
	if !self {
		return fmt.Errorf("this server (id %d) is not among the server.N lines", c.ServerID)
	}
	e := &c.Ensemble
	if e.Trees <= 1 || len(e.Peers) < e.Trees {
		e.Classic = true
	}
	if !e.Classic && e.Children < 1 {
		return errors.New("giraffe.children must be >= 1")
	}
	if e.Tick <= 0 {
		e.Tick = 25 * time.Millisecond
	}
	if e.ElectionTicks <= 0 {
		e.ElectionTicks = 8
	}
	if e.ElectionTicks <= 4 {
		return errors.New("giraffe.electionTicks must be > 4")
	}
	return nil
}

// Self returns this server's Peer entry.
func (c *Config) Self() Peer {
	for _, p := range c.Ensemble.Peers {
		if p.ID == c.ServerID {
			return p
		}
	}
	return Peer{}
}

// Voters returns the voting configuration of the ensemble: one group per
// tree of the forest (internal/forest) built by joining the servers in id
// order, so every member computes the same groups; classic mode is one
// group. Color returns each server's group.
func (e *Ensemble) Voters() (quorum.Config, error) {
	if e.Joined != nil {
		return *e.Joined, nil
	}
	ids := make([]int64, 0, len(e.Peers))
	for _, p := range e.Peers {
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	if e.Classic {
		g := make([]quorum.ID, len(ids))
		for i, id := range ids {
			g[i] = quorum.ID(id)
		}
		return quorum.Config{Groups: [][]quorum.ID{g}}, nil
	}
	var changes []forest.Change
	for _, id := range ids {
		changes = append(changes, forest.Change{Op: forest.OpJoin, Server: forest.ServerID(id), Addr: fmt.Sprint(id)})
	}
	f, err := forest.Replay(forest.Config{Trees: e.Trees, MaxChildren: e.Children}, changes)
	if err != nil {
		return quorum.Config{}, err
	}
	var v quorum.Config
	for k := 0; k < e.Trees; k++ {
		var g []quorum.ID
		for _, id := range f.Group(forest.Color(k)) {
			g = append(g, quorum.ID(id))
		}
		v.Groups = append(v.Groups, g)
	}
	return v, nil
}

// Topology returns how a group's messages travel from its coordinator.
func (e *Ensemble) Topology() gpaxos.Topology {
	if e.Classic {
		return gpaxos.StarTopology{}
	}
	return gpaxos.TreeTopology{Fanout: e.Children}
}
