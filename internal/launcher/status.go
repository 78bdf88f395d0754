package launcher

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/members"
)

// This file is what the servers of a cluster say of themselves (srvr) and
// of the ensemble (the serving leader's committed membership).

// Status is one row of `giraffe cluster status`.
type Status struct {
	ID      members.ID `json:"id"`
	Address string     `json:"address"`
	Color   int        `json:"color"`
	Role    string     `json:"role"`
	Zxid    int64      `json:"zxid"`
	Alive   bool       `json:"alive"`
	PID     int        `json:"pid"`
	// Mode is what ZooKeeper tools see: leader or follower; empty while
	// the server does not serve (Serving).
	Mode string `json:"mode,omitempty"`
	// Serving is false while the server answers ZooKeeper's "not
	// currently serving requests": out of contact with a quorum, or not
	// a member of the ensemble.
	Serving bool `json:"serving"`
	// Leader is the global leader this server follows.
	Leader members.ID `json:"leader,omitempty"`
	// Registration is whether the ensemble counts the server's votes:
	// registered, pending or recovering (srvr's "Giraffe registration").
	Registration string `json:"registration,omitempty"`
	// SecureAddress is the secure client port, when the cluster has TLS.
	SecureAddress string `json:"secure_address,omitempty"`
	// Console is the URL of the server's web console (on its admin port).
	Console string `json:"console"`
	// Member is whether the server is in the ensemble's committed
	// membership as the serving leader has applied it ("yes" or "no"),
	// or "unknown" when no leader serves.
	Member string `json:"member"`
}

// Status asks every server (four-letter word srvr) for its state. A
// server that does not answer is reported with alive=false when its
// process is gone, or role "unreachable".
func (c *Cluster) Status() []Status {
	out := make([]Status, 0, len(c.Servers))
	for _, s := range c.Servers {
		st := Status{ID: s.ID, Address: s.ClientAddr, SecureAddress: s.SecureClientAddr, PID: s.PID, Color: -1,
			Alive: alive(s.PID), Console: s.ConsoleURL()}
		if st.Alive {
			if kv, err := FourLetter(s.ClientAddr, "srvr", time.Second); err == nil {
				st.Role = kv["Giraffe role"]
				st.Mode = kv["Mode"]
				st.Serving = st.Mode != ""
				st.Color, _ = strconv.Atoi(kv["Giraffe group"])
				st.Leader, _ = members.ParseID(kv["Giraffe leader"])
				st.Registration = kv["Giraffe registration"]
				if z, err := strconv.ParseInt(strings.TrimPrefix(kv["Zxid"], "0x"), 16, 64); err == nil {
					st.Zxid = z
				}
			} else {
				st.Role = "unreachable"
			}
		} else {
			st.Role = "down"
		}
		out = append(out, st)
	}
	committed := c.committedMembers(out)
	for i := range out {
		switch {
		case committed == nil:
			out[i].Member = "unknown"
		case slices.Contains(committed, out[i].ID):
			out[i].Member = "yes"
		default:
			out[i].Member = "no"
		}
	}
	return out
}

// committedMembers returns the members of the committed membership the
// serving leader has applied, or nil when no leader serves or it does not
// answer. A process's own view can lag or be wrong (a removed server
// still running, an isolated one that thinks it leads); the serving
// leader's is the ensemble's.
func (c *Cluster) committedMembers(rows []Status) []members.ID {
	for _, st := range rows {
		if st.Mode == "standalone" {
			return []members.ID{st.ID}
		}
		if st.Role != "leader" || !st.Serving {
			continue
		}
		m, err := c.Membership(st.ID)
		if err != nil {
			return nil
		}
		ids := []members.ID{}
		for _, x := range m.Members {
			ids = append(ids, x.ID)
		}
		return ids
	}
	return nil
}

// WaitLeader waits until a live server reports itself leader, every live
// server reports that leader, and each has served clients under it (a
// member serves once a proposal of its own has committed). A cluster of
// one server is a standalone server, which leads itself once it serves.
func (c *Cluster) WaitLeader(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	// servedUnder[id] is the leader server id followed when it was last
	// seen serving. A member with no session to protect stops serving
	// for a moment whenever its own touches commit slower than a third of
	// minSessionTimeout (a busy machine, tight test timeouts); every
	// member having served under the leader they all follow is the
	// ensemble ready, even if not all at one instant.
	servedUnder := map[members.ID]members.ID{}
	for {
		rows := c.Status()
		leader := members.None
		for i, st := range rows {
			if st.Alive && st.Mode == "standalone" {
				// One server line makes a standalone server, as in
				// ZooKeeper: it leads itself.
				rows[i].Role, rows[i].Leader = "leader", st.ID
			}
			if st.Alive && rows[i].Role == "leader" {
				leader = st.ID
			}
		}
		ready := leader != members.None
		for _, st := range rows {
			if !st.Alive {
				continue
			}
			if st.Serving && st.Leader == leader {
				servedUnder[st.ID] = leader
			}
			if st.Leader != leader || servedUnder[st.ID] != leader {
				ready = false
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no leader within %v (server logs: %s/s*/server.log)", timeout, c.Spec.Dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FourLetter sends a four-letter word and parses "Key: value" lines.
func FourLetter(addr, word string, timeout time.Duration) (map[string]string, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(timeout))
	if _, err := nc.Write([]byte(word)); err != nil {
		return nil, err
	}
	kv := map[string]string{}
	sc := bufio.NewScanner(nc)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ": "); ok {
			kv[k] = v
		}
	}
	if len(kv) == 0 {
		return nil, fmt.Errorf("%s: no answer to %s", addr, word)
	}
	return kv, nil
}
