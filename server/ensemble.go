package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// The membership types of internal/members, named here so that programs
// outside this module (package embed's users) can configure an ensemble.
type (
	// Member is one server of an ensemble and its addresses.
	Member = members.Member
	// Shape arranges an ensemble: classic, or a forest of groups.
	Shape = members.Shape
	// ID is a server's id in its ensemble.
	ID = members.ID
)

// Ensemble configures replication. With no Members the server is standalone.
type Ensemble struct {
	// Members are the servers of the ensemble: zoo.cfg's server.N and
	// giraffe.admin.N lines, or, for a joined server, the members the
	// ensemble had when it joined.
	Members []members.Member
	// Shape arranges them: Shape.Trees groups, each relaying down a tree
	// of fan-out Shape.Children, or (Shape.Classic, or Trees <= 1) one
	// group with a star, a leader-centric protocol like Zab. Validate sets
	// Shape.Nodes to the number of Members.
	Shape members.Shape
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
func (c *Config) Replicated() bool { return len(c.Ensemble.Members) > 0 }

// setEnsemble handles the ensemble keys of zoo.cfg: server.N lines in
// ZooKeeper's format (server.1=host:peerPort[:electionPort][;[clientHost:]clientPort];
// Giraffe uses one peer port and ignores the second) and giraffe.* keys.
func (c *Config) setEnsemble(key, val string) (bool, error) {
	if rest, ok := strings.CutPrefix(key, "giraffe.admin."); ok {
		id, err := members.ParseID(rest)
		if err != nil {
			return true, fmt.Errorf("bad server id in %s", key)
		}
		c.pendingAdmin = append(c.pendingAdmin, members.Member{ID: id, Admin: val})
		return true, nil
	}
	if rest, ok := strings.CutPrefix(key, "server."); ok {
		id, err := members.ParseID(rest)
		if err != nil || id <= 0 || id > 255 {
			return true, fmt.Errorf("server id must be in [1,255]")
		}
		m, err := parseServerLine(id, val)
		if err != nil {
			return true, err
		}
		c.Ensemble.Members = append(c.Ensemble.Members, m)
		return true, nil
	}
	var err error
	switch key {
	case "giraffe.trees":
		c.Ensemble.Shape.Trees, err = strconv.Atoi(val)
	case "giraffe.children":
		c.Ensemble.Shape.Children, err = strconv.Atoi(val)
	case "giraffe.classic":
		c.Ensemble.Shape.Classic, err = strconv.ParseBool(val)
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

// parseServerLine parses the value of a server.N line.
func parseServerLine(id members.ID, val string) (members.Member, error) {
	m := members.Member{ID: id}
	addr, client, hasClient := strings.Cut(val, ";")
	parts := strings.Split(addr, ":")
	if len(parts) < 2 {
		return m, fmt.Errorf("expected host:peerPort, got %q", val)
	}
	if _, err := strconv.Atoi(parts[1]); err != nil {
		return m, fmt.Errorf("bad peer port %q", parts[1])
	}
	m.Peer = net.JoinHostPort(parts[0], parts[1])
	if hasClient {
		if !strings.Contains(client, ":") {
			client = net.JoinHostPort(parts[0], client)
		}
		m.Client = client
	}
	return m, nil
}

// readMyID reads dataDir/myid as ZooKeeper does, when serverId is not set.
func (c *Config) readMyID() error {
	if len(c.Ensemble.Members) == 1 {
		// As ZooKeeper with standaloneEnabled (its default): a single
		// server line is a standalone server.
		c.Ensemble.Members = nil
	}
	if c.ServerID != 0 || !c.Replicated() {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.DataDir, "myid"))
	if err != nil {
		return fmt.Errorf("ensemble member needs serverId or %s: %w", filepath.Join(c.DataDir, "myid"), err)
	}
	n, err := members.ParseID(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("myid: %w", err)
	}
	c.ServerID = n
	return nil
}

func (c *Config) validateEnsemble() error {
	for _, a := range c.pendingAdmin {
		for i := range c.Ensemble.Members {
			if c.Ensemble.Members[i].ID == a.ID {
				c.Ensemble.Members[i].Admin = a.Admin
			}
		}
	}
	c.pendingAdmin = nil
	if !c.Replicated() {
		return nil
	}
	seen := map[members.ID]bool{}
	self := false
	for _, p := range c.Ensemble.Members {
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
	e.Shape.Nodes = len(e.Members)
	if e.Shape.Trees <= 1 || len(e.Members) < e.Shape.Trees {
		e.Shape.Classic = true
	}
	if !e.Shape.Classic && e.Shape.Children < 1 {
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

// Self returns this server's entry among the members.
func (c *Config) Self() members.Member {
	for _, m := range c.Ensemble.Members {
		if m.ID == c.ServerID {
			return m
		}
	}
	return members.Member{}
}

// Voters returns the voting configuration the ensemble starts with: the
// one it was given on joining, or the groups members.Voters derives from
// the server lines.
func (e *Ensemble) Voters() (quorum.Config, error) {
	if e.Joined != nil {
		return *e.Joined, nil
	}
	ids := make([]members.ID, 0, len(e.Members))
	for _, m := range e.Members {
		ids = append(ids, m.ID)
	}
	return members.Voters(e.Shape, ids)
}
