// Package adminapi is the HTTP interface on a server's admin listener
// through which an ensemble's membership is read and changed and faults
// are injected, and its client:
//
//	GET  /membership   the ensemble as the server knows it (Membership)
//	POST /join         JoinRequest; answers the Membership with the joined server
//	POST /leave        LeaveRequest; answers the Membership after the departure
//	POST /reconfig     ReconfigRequest; answers ReconfigAnswer (ZooKeeper's reconfig, forwarded)
//	GET  /faults       the faults injected into the server's peer transport
//	POST /faults       a fault spec (transport.ParseFaultSpec); for tests
//	GET  /commands/snapshot  ZooKeeper's snapshot command: the committed tree as a snapshot file (Client.Snapshot)
//
// Every request carries the ensemble's admin token as a bearer token
// (Authorization: Bearer TOKEN; ReadTokenFile, CheckToken); a request
// without it, or with another, is answered 401. /faults exists only on
// servers started with fault injection (404 otherwise). A server's metrics
// port serves GET /membership too, without a token: the membership is no
// secret (clients read it in /zookeeper/config), and GET /namespaces,
// each namespace's status (NamespacesStatus).
//
// Joins and departures are ordered by the global leader; another member
// answers 421 Misdirected Request with NotLeader, naming the leader's
// admin address, which the client follows. It also holds the record a
// joined server keeps in its data directory (JoinRecord).
package adminapi

import (
	"github.com/giraffe-coord/giraffe/internal/members"
)

// The paths of the admin listener.
const (
	PathMembership = "/membership"
	PathJoin       = "/join"
	PathLeave      = "/leave"
	PathReconfig   = "/reconfig"
	PathFaults     = "/faults"
	PathSnapshot   = "/commands/snapshot"
)

// Membership is the answer of GET /membership and of a join or departure:
// enough for a joining server to start.
type Membership struct {
	// ID is the answering server; in the answer to a join, the joined one.
	ID      members.ID     `json:"id"`
	Leader  members.ID     `json:"leader"`
	Members []MemberStatus `json:"members"`
	// Groups is the committed voting configuration.
	Groups [][]members.ID `json:"groups"`
	// Forest is the history of joins (+id) and departures (-id), oldest
	// first, from which the forest derives the groups.
	Forest string `json:"forest"`
	// Trees, Children and Classic are the ensemble's shape (Shape).
	Trees         int   `json:"trees"`
	Children      int   `json:"children"`
	Classic       bool  `json:"classic"`
	TickMs        int64 `json:"tick_ms"`
	ElectionTicks int   `json:"election_ticks"`
	// Cluster is the name peers present in their handshake.
	Cluster string `json:"cluster"`
	// Namespaces is the namespace table the members declare, in
	// /zookeeper/namespaces' JSON; empty when none is declared.
	Namespaces string `json:"namespaces,omitempty"`
}

// Shape returns the ensemble's shape, with Nodes the number of Members.
func (m Membership) Shape() members.Shape {
	return members.Shape{Nodes: len(m.Members), Trees: m.Trees, Children: m.Children, Classic: m.Classic}
}

// MemberStatus is one member in Membership.
type MemberStatus struct {
	members.Member
	Group int `json:"group"` // -1 while not a voter
}

// JoinRequest is the body of POST /join.
type JoinRequest struct {
	// Member is the joining server; ID 0 asks the leader for the next
	// free id.
	members.Member
	// Prepare asks only what the join would make (the server's id and
	// group, the voting configuration and the membership with it) without
	// proposing it: the joining server starts with that, then asks again
	// without Prepare.
	Prepare bool `json:"prepare,omitempty"`
}

// LeaveRequest is the body of POST /leave.
type LeaveRequest struct {
	ID members.ID `json:"id"`
}

// ReconfigRequest is the body of POST /reconfig: a ZooKeeper client's
// reconfig, which the member it reached has authorized and parsed into
// one change, forwarded to the leader, which checks the configuration
// version and makes the change.
type ReconfigRequest struct {
	// Join is the server to add, or Leave the one to remove.
	Join  *members.Member `json:"join,omitempty"`
	Leave members.ID      `json:"leave,omitempty"`
	// ConfigID is the version of /zookeeper/config the client requires
	// (-1: any), ReconfigRequest.curConfigId.
	ConfigID int64 `json:"config_id"`
}

// ReconfigAnswer is the answer to POST /reconfig: the ZooKeeper error
// code for the client (0 once the change has committed) and why.
type ReconfigAnswer struct {
	Code  int32  `json:"code"`
	Error string `json:"error,omitempty"`
}

// NotLeader is the body of a 421 answer: the change must be asked of the
// leader, at LeaderAdmin when known.
type NotLeader struct {
	Error       string `json:"error"`
	LeaderAdmin string `json:"leader_admin"`
}
