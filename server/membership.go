package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/forest"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// This file is the ensemble's membership as the server sees it: the
// address book of every member and the history of joins and departures
// from which the forest (and so each server's group) is derived. It lives
// in "/zookeeper/config", where ZooKeeper 3.5+ publishes its own ensemble
// (server.N lines), so that it is replicated, snapshotted and readable by
// any ZooKeeper client. A configuration change carries the whole new
// membership as its context (gpaxos.EncodeConfEntry); every replica writes
// it to the node when the change commits.

// member is one server of the address book.
type member struct {
	ID     int64  `json:"id"`
	Peer   string `json:"peer"`             // host:port of the Group Paxos port
	Client string `json:"client,omitempty"` // host:port of the client port
	Admin  string `json:"admin,omitempty"`  // host:port of the metrics/admin port
}

// membership is the ensemble's membership after some change.
type membership struct {
	Members []member        // sorted by ID
	Changes []forest.Change // joins and departures, oldest first (forest.Replay)
}

// staticMembership is the membership of the zoo.cfg server lines: every
// server joined in id order (as Ensemble.Voters builds the forest).
func staticMembership(e *Ensemble) membership {
	var m membership
	for _, p := range e.Peers {
		m.Members = append(m.Members, member{ID: p.ID, Peer: p.PeerAddr, Client: p.ClientAddr, Admin: p.AdminAddr})
	}
	slices.SortFunc(m.Members, func(a, b member) int { return int(a.ID - b.ID) })
	for _, x := range m.Members {
		m.Changes = append(m.Changes, forest.Change{Op: forest.OpJoin, Server: forest.ServerID(x.ID), Addr: fmt.Sprint(x.ID)})
	}
	return m
}

func (m membership) member(id int64) (member, bool) {
	i := slices.IndexFunc(m.Members, func(x member) bool { return x.ID == id })
	if i < 0 {
		return member{}, false
	}
	return m.Members[i], true
}

// clone returns a deep copy.
func (m membership) clone() membership {
	return membership{Members: slices.Clone(m.Members), Changes: slices.Clone(m.Changes)}
}

// forest replays the membership's changes.
func (m membership) forest(e *Ensemble) (*forest.Forest, error) {
	return forest.Replay(forest.Config{Trees: max(e.Trees, 1), MaxChildren: max(e.Children, 1)}, m.Changes)
}

// encode writes the membership in /zookeeper/config's format: ZooKeeper's
// server.N lines (host:peer:peer:participant;host:client), then Giraffe's
// admin addresses and forest history, which ZooKeeper clients ignore.
func (m membership) encode() []byte {
	var b bytes.Buffer
	for _, x := range m.Members {
		host, port, _ := net.SplitHostPort(x.Peer)
		fmt.Fprintf(&b, "server.%d=%s:%s:%s:participant", x.ID, host, port, port)
		if x.Client != "" {
			fmt.Fprintf(&b, ";%s", x.Client)
		}
		b.WriteByte('\n')
	}
	for _, x := range m.Members {
		if x.Admin != "" {
			fmt.Fprintf(&b, "giraffe.admin.%d=%s\n", x.ID, x.Admin)
		}
	}
	b.WriteString("giraffe.forest=")
	for i, c := range m.Changes {
		if i > 0 {
			b.WriteByte(' ')
		}
		sign := "+"
		if c.Op == forest.OpLeave {
			sign = "-"
		}
		fmt.Fprintf(&b, "%s%d", sign, c.Server)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// decodeMembership parses encode's output (a trailing version line, which
// the node carries, is ignored).
func decodeMembership(data []byte) (membership, error) {
	var m membership
	admin := map[int64]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(key, "server."):
			id, err := strconv.ParseInt(strings.TrimPrefix(key, "server."), 10, 64)
			if err != nil {
				return m, fmt.Errorf("membership: %q: %w", key, err)
			}
			addr, client, _ := strings.Cut(val, ";")
			parts := strings.Split(addr, ":")
			if len(parts) < 2 {
				return m, fmt.Errorf("membership: bad address %q", val)
			}
			m.Members = append(m.Members, member{ID: id, Peer: net.JoinHostPort(parts[0], parts[1]), Client: client})
		case strings.HasPrefix(key, "giraffe.admin."):
			id, err := strconv.ParseInt(strings.TrimPrefix(key, "giraffe.admin."), 10, 64)
			if err != nil {
				return m, fmt.Errorf("membership: %q: %w", key, err)
			}
			admin[id] = val
		case key == "giraffe.forest":
			for _, f := range strings.Fields(val) {
				id, err := strconv.ParseInt(f[1:], 10, 64)
				if err != nil || (f[0] != '+' && f[0] != '-') {
					return m, fmt.Errorf("membership: bad forest change %q", f)
				}
				op := forest.OpJoin
				if f[0] == '-' {
					op = forest.OpLeave
				}
				m.Changes = append(m.Changes, forest.Change{Op: op, Server: forest.ServerID(id), Addr: fmt.Sprint(id)})
			}
		}
	}
	for i := range m.Members {
		m.Members[i].Admin = admin[m.Members[i].ID]
	}
	slices.SortFunc(m.Members, func(a, b member) int { return int(a.ID - b.ID) })
	return m, sc.Err()
}

// peerAddrs is the transport's address book: every member but self.
func (m membership) peerAddrs(self int64) map[gpaxos.ID]string {
	out := map[gpaxos.ID]string{}
	for _, x := range m.Members {
		if x.ID != self {
			out[gpaxos.ID(x.ID)] = x.Peer
		}
	}
	return out
}

// groupOf returns the group of id in voters, or -1.
func groupOf(voters quorum.Config, id int64) int { return voters.GroupOf(quorum.ID(id)) }
