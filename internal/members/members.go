// Package members is an ensemble's membership as pure data: the servers
// and their addresses (Member, Membership), the shape of the ensemble
// (Shape: classic, or a forest of groups), the voting configuration the
// forest gives a set of servers (Voters), and the configuration changes
// that add or remove one server (PlanJoin, PlanLeave). The server, the
// launcher, the simulator and the tools share it, so that every part of
// Giraffe computes groups, parses shapes and plans changes the same way.
//
// It is pure: no I/O, no clock, no randomness.
package members

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/forest"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// ID is a server's id in its ensemble (ZooKeeper's myid): quorum.ID, the
// one server-id type of Giraffe, under the name the edges of the system
// use.
type ID = quorum.ID

// None is the ID of no server.
const None ID = 0

// Member is one server of an ensemble and the addresses it is reached at.
type Member struct {
	ID ID `json:"id"`
	// Peer is host:port of the server-to-server (Group Paxos) port.
	Peer string `json:"peer"`
	// Client is host:port of the ZooKeeper client port, when known.
	Client string `json:"client,omitempty"`
	// Admin is host:port of the server's admin port, where joins and
	// departures are asked for (with the ensemble's admin token), when
	// known.
	Admin string `json:"admin,omitempty"`
}

// Membership is an ensemble's membership after some change: its members
// and the history of joins and departures from which the forest (and so
// every server's group) is derived.
type Membership struct {
	Members []Member        // sorted by ID
	Changes []forest.Change // joins and departures, oldest first (forest.Replay)
}

// Static returns the membership of an ensemble that started with ms: every
// server joined in id order, as Voters builds the forest.
func Static(ms []Member) Membership {
	m := Membership{Members: slices.Clone(ms)}
	sortMembers(m.Members)
	for _, x := range m.Members {
		m.Changes = append(m.Changes, joinChange(x.ID))
	}
	return m
}

func sortMembers(ms []Member) {
	slices.SortFunc(ms, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
}

func joinChange(id ID) forest.Change {
	return forest.Change{Op: forest.OpJoin, Server: forest.ServerID(id), Addr: fmt.Sprint(id)}
}

func leaveChange(id ID) forest.Change {
	return forest.Change{Op: forest.OpLeave, Server: forest.ServerID(id)}
}

// Member returns the member with id.
func (m Membership) Member(id ID) (Member, bool) {
	i := slices.IndexFunc(m.Members, func(x Member) bool { return x.ID == id })
	if i < 0 {
		return Member{}, false
	}
	return m.Members[i], true
}

// Clone returns a deep copy.
func (m Membership) Clone() Membership {
	return Membership{Members: slices.Clone(m.Members), Changes: slices.Clone(m.Changes)}
}

// Forest replays the membership's history in an ensemble of shape s.
func (m Membership) Forest(s Shape) (*forest.Forest, error) {
	return forest.Replay(s.forestConfig(), m.Changes)
}

// PeerAddrs is the peer transport's address book: every member but self.
func (m Membership) PeerAddrs(self ID) map[ID]string {
	out := map[ID]string{}
	for _, x := range m.Members {
		if x.ID != self {
			out[x.ID] = x.Peer
		}
	}
	return out
}

// History writes the joins (+id) and departures (-id), oldest first,
// separated by spaces.
func (m Membership) History() string {
	var b strings.Builder
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
	return b.String()
}

// Encode writes the membership in the format of "/zookeeper/config", where
// ZooKeeper 3.5+ publishes its ensemble: ZooKeeper's server.N lines
// (host:peer:0:participant;client), then Giraffe's admin addresses and
// history, which ZooKeeper clients ignore. Giraffe has no election port;
// the line names port 0 there because ZooKeeper's parser of the node
// (QuorumMaj, which Curator's EnsembleTracker runs on it) refuses a line
// whose election port equals its quorum port.
func (m Membership) Encode() []byte {
	var b bytes.Buffer
	for _, x := range m.Members {
		host, port, _ := net.SplitHostPort(x.Peer)
		fmt.Fprintf(&b, "server.%d=%s:%s:0:participant", x.ID, host, port)
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
	fmt.Fprintf(&b, "giraffe.forest=%s\n", m.History())
	return b.Bytes()
}

// Decode parses Encode's output; other lines (the version line the node
// carries) are ignored.
func Decode(data []byte) (Membership, error) {
	var m Membership
	admin := map[ID]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(key, "server."):
			id, err := ParseID(strings.TrimPrefix(key, "server."))
			if err != nil {
				return m, fmt.Errorf("membership: %q: %w", key, err)
			}
			addr, client, _ := strings.Cut(val, ";")
			parts := strings.Split(addr, ":")
			if len(parts) < 2 {
				return m, fmt.Errorf("membership: bad address %q", val)
			}
			m.Members = append(m.Members, Member{ID: id, Peer: net.JoinHostPort(parts[0], parts[1]), Client: client})
		case strings.HasPrefix(key, "giraffe.admin."):
			id, err := ParseID(strings.TrimPrefix(key, "giraffe.admin."))
			if err != nil {
				return m, fmt.Errorf("membership: %q: %w", key, err)
			}
			admin[id] = val
		case key == "giraffe.forest":
			for _, f := range strings.Fields(val) {
				id, err := ParseID(f[1:])
				if err != nil || (f[0] != '+' && f[0] != '-') {
					return m, fmt.Errorf("membership: bad forest change %q", f)
				}
				if f[0] == '+' {
					m.Changes = append(m.Changes, joinChange(id))
				} else {
					m.Changes = append(m.Changes, leaveChange(id))
				}
			}
		}
	}
	for i := range m.Members {
		m.Members[i].Admin = admin[m.Members[i].ID]
	}
	sortMembers(m.Members)
	return m, sc.Err()
}

// ParseID parses a decimal server id.
func ParseID(s string) (ID, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	return ID(n), err
}
