package members

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// This file reads the server strings of ZooKeeper's reconfig request
// (ReconfigRequest's joiningServers, leavingServers and newMembers) and
// turns a request into the single-server change Giraffe makes.

// ZKChange is the one change a ZooKeeper reconfig request asks for: a
// server to add (Join.ID != None) or a server to remove (Leave != None),
// never both.
type ZKChange struct {
	Join  Member
	Leave ID
}

// ErrOneServer marks a reconfig request that adds or removes more (or
// fewer) than one server: Giraffe changes its configuration one server
// at a time, and a request ZooKeeper would apply as one atomic change is
// refused rather than applied in parts.
var ErrOneServer = errors.New("reconfig: Giraffe changes one server per request")

// JoiningSpec is x's joining server string for ZooKeeper's reconfig -add,
// as ParseZKServer reads it: server.N=host:peer:peer:participant;client,
// the peer port given for the election port too (ZooKeeper requires one
// and Giraffe ignores it), then ,giraffe.admin.N=address when x has an
// admin address.
func (x Member) JoiningSpec() string {
	host, port, _ := net.SplitHostPort(x.Peer)
	spec := fmt.Sprintf("server.%d=%s:%s:%s:participant;%s", x.ID, host, port, port, x.Client)
	if x.Admin != "" {
		spec += fmt.Sprintf(",giraffe.admin.%d=%s", x.ID, x.Admin)
	}
	return spec
}

// ParseZKServer parses one server string of ZooKeeper's dynamic
// configuration, as reconfig's joiningServers and newMembers carry it:
//
//	server.N=host:quorumPort:electionPort[:participant][;[clientHost:]clientPort]
//
// The quorum port is Giraffe's peer port; the election port, which
// Giraffe does not use, must be given (ZooKeeper requires it) and is
// ignored. Observers do not exist in Giraffe and are refused. A client
// address given as a port alone is on the server's host.
func ParseZKServer(s string) (Member, error) {
	key, val, ok := strings.Cut(strings.TrimSpace(s), "=")
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	if !ok || !strings.HasPrefix(key, "server.") {
		return Member{}, fmt.Errorf("%q: not a server.N=... string", s)
	}
	id, err := ParseID(strings.TrimPrefix(key, "server."))
	if err != nil || id == None || id > 255 {
		// Ids are 1 to 255, as in zoo.cfg: a session id's high byte.
		return Member{}, fmt.Errorf("%q: bad server id (1 to 255)", key)
	}
	spec, client, hasClient := strings.Cut(val, ";")
	parts := strings.Split(spec, ":")
	if len(parts) < 3 || len(parts) > 4 || parts[0] == "" {
		return Member{}, fmt.Errorf("%q: want host:quorumPort:electionPort[:role]", val)
	}
	for _, p := range parts[1:3] {
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return Member{}, fmt.Errorf("%q: bad port %q", val, p)
		}
	}
	if len(parts) == 4 && parts[3] != "participant" {
		return Member{}, fmt.Errorf("%q: role %q: Giraffe's members are all participants", val, parts[3])
	}
	m := Member{ID: id, Peer: net.JoinHostPort(parts[0], parts[1])}
	if !hasClient || strings.TrimSpace(client) == "" {
		// ZooKeeper's rule: a joiner names its client port.
		return Member{}, fmt.Errorf("%q: no client port (;clientPort or ;host:clientPort)", val)
	}
	client = strings.TrimSpace(client)
	host, port := parts[0], client
	if h, p, err := net.SplitHostPort(client); err == nil {
		host, port = h, p
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return Member{}, fmt.Errorf("%q: bad client port %q", client, port)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = parts[0]
	}
	m.Client = net.JoinHostPort(host, port)
	return m, nil
}

// ParseZKReconfig turns a ZooKeeper reconfig request into the single
// change it asks of membership cur. joining is a comma-separated list of
// server strings (ParseZKServer), plus optionally Giraffe's
// giraffe.admin.N=host:port naming a joiner's admin port; leaving a
// comma-separated list of ids; newMembers, when not empty, the whole new
// membership (a non-incremental reconfig), accepted when it differs from
// cur by exactly one server added or removed, the others unchanged.
func ParseZKReconfig(cur Membership, joining, leaving, newMembers string) (ZKChange, error) {
	if strings.TrimSpace(newMembers) != "" {
		if strings.TrimSpace(joining) != "" || strings.TrimSpace(leaving) != "" {
			return ZKChange{}, errors.New("reconfig: newMembers with joining or leaving servers")
		}
		return nonIncremental(cur, newMembers)
	}
	var ch ZKChange
	n := 0
	admin := map[ID]string{}
	for _, s := range splitList(joining, ",") {
		if k, v, ok := strings.Cut(s, "="); ok && strings.HasPrefix(strings.TrimSpace(k), "giraffe.admin.") {
			id, err := ParseID(strings.TrimPrefix(strings.TrimSpace(k), "giraffe.admin."))
			if _, _, perr := net.SplitHostPort(strings.TrimSpace(v)); err != nil || perr != nil {
				return ZKChange{}, fmt.Errorf("reconfig: bad admin address %q", s)
			}
			admin[id] = strings.TrimSpace(v)
			continue
		}
		m, err := ParseZKServer(s)
		if err != nil {
			return ZKChange{}, fmt.Errorf("reconfig: %w", err)
		}
		ch.Join = m
		n++
	}
	for _, s := range splitList(leaving, ",") {
		id, err := ParseID(s)
		if err != nil || id == None {
			return ZKChange{}, fmt.Errorf("reconfig: bad server id %q to remove", s)
		}
		ch.Leave = id
		n++
	}
	if n != 1 {
		return ZKChange{}, fmt.Errorf("%w: this one adds %d and removes %d", ErrOneServer,
			len(splitList(joining, ","))-len(admin), len(splitList(leaving, ",")))
	}
	for id, a := range admin {
		if id != ch.Join.ID {
			return ZKChange{}, fmt.Errorf("reconfig: giraffe.admin.%d names no joining server", id)
		}
		ch.Join.Admin = a
	}
	return ch, nil
}

// nonIncremental maps a whole new membership onto one change of cur.
func nonIncremental(cur Membership, newMembers string) (ZKChange, error) {
	next := map[ID]Member{}
	// ZooKeeper takes commas and newlines alike; other keys (version=)
	// are not servers.
	for _, s := range splitList(strings.ReplaceAll(newMembers, "\n", ","), ",") {
		if !strings.HasPrefix(s, "server.") {
			continue
		}
		m, err := ParseZKServer(s)
		if err != nil {
			return ZKChange{}, fmt.Errorf("reconfig: %w", err)
		}
		next[m.ID] = m
	}
	var ch ZKChange
	n := 0
	for _, x := range cur.Members {
		y, ok := next[x.ID]
		switch {
		case !ok:
			ch.Leave = x.ID
			n++
		case y.Peer != x.Peer:
			return ZKChange{}, fmt.Errorf("%w: server %d moves from %s to %s (remove it, then add it)", ErrOneServer, x.ID, x.Peer, y.Peer)
		}
		delete(next, x.ID)
	}
	for _, y := range next {
		ch.Join = y
		n++
	}
	if n != 1 {
		return ZKChange{}, fmt.Errorf("%w: the new membership differs from the current one by %d servers", ErrOneServer, n)
	}
	return ch, nil
}

// splitList splits s at sep and drops empty, space-trimmed items.
func splitList(s, sep string) []string {
	var out []string
	for _, x := range strings.Split(s, sep) {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
