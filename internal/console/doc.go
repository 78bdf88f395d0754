// Package console is the web console every server serves on its admin
// listener under /ui/ (docs/console.md): the front end's files, embedded
// in the binary (assets.go), the JSON its pages read (this file's types),
// a server's load second by second for its charts (Recorder), and the
// ensemble as one server sees it, gathered from every member's own report
// (Gather). Reading needs no token; changing znodes needs the admin token
// (the server's console.go decides it).
//
// The JSON endpoints, all under /ui/api/:
//
//	GET    self          this server (Self)
//	GET    series        this server's Samples over the last Keep seconds
//	GET    ensemble      every member's Self, the groups and their trees (Ensemble)
//	GET    loads         every member's Samples, by server id
//	GET    events        this server's Events (Journal)
//	GET    timeline      every member's Events, by server id
//	GET    whoami        whether the request carries the admin token (Who)
//	GET    znode?path=P  one znode: data, Stat, ACL and children (Znode)
//	GET    watch?path=P  server-sent events: "ready" once a persistent watch on P is in place, then "change" ({type, path, zxid}) for each event it fires
//	GET    nsstatus      this server's namespaces: level, state, last zxid, znodes, digest
//	GET    namespaces    every member's nsstatus, by server id
//	POST   znode         create (Change; admin token)
//	PUT    znode         set data, with a version check (Change; admin token)
//	DELETE znode?path=P&version=V  delete, with a version check (admin token)
package console

import "github.com/giraffe-coord/giraffe/internal/quorum"

// The paths of the console under the admin listener.
const (
	Prefix       = "/ui/"
	PathSelf     = "/ui/api/self"
	PathSeries   = "/ui/api/series"
	PathEnsemble = "/ui/api/ensemble"
	PathLoads    = "/ui/api/loads"
	PathEvents   = "/ui/api/events"
	PathTimeline = "/ui/api/timeline"
	PathWhoami   = "/ui/api/whoami"
	PathZnode    = "/ui/api/znode"
	// PathNSStatus is this server's namespaces (adminapi.NamespacesStatus,
	// as the metrics port's /namespaces); PathNamespaces every member's.
	PathNSStatus = "/ui/api/nsstatus"
	// PathWatch streams a znode's watch events (server-sent events).
	PathWatch      = "/ui/api/watch"
	PathNamespaces = "/ui/api/namespaces"
)

// Roles a server reports beside the protocol's (leader, coordinator,
// acceptor): a standalone server, and in the ensemble view a member that
// does not answer.
const (
	RoleStandalone  = "standalone"
	RoleUnreachable = "unreachable"
)

// Self is one server's report of its own state (GET /ui/api/self).
type Self struct {
	ID quorum.ID `json:"id"`
	// Role is leader, coordinator, acceptor or standalone.
	Role  string `json:"role"`
	Group int    `json:"group"`
	// Leader is the global leader the server follows, Coordinator the
	// coordinator of its group it follows (0 when unknown).
	Leader      quorum.ID `json:"leader"`
	Coordinator quorum.ID `json:"coordinator"`
	Epoch       uint64    `json:"epoch"`
	// LastZxid, Commit and Applied are zxids in hex (0x...): the last
	// entry in the log, the last known committed, the last applied.
	LastZxid string `json:"last_zxid"`
	Commit   string `json:"commit"`
	Applied  string `json:"applied"`
	// Pending is the entries in the log not yet applied.
	Pending int64 `json:"pending"`
	// Serving: the server answers clients (in contact with a quorum).
	Serving bool `json:"serving"`
	// Recovering: the server does not vote until the ensemble registers
	// its new durable state.
	Recovering  bool `json:"recovering"`
	Connections int  `json:"connections"`
	Sessions    int  `json:"sessions"`
	Znodes      int  `json:"znodes"`
	// Down is the members its group's coordinator routes around, as this
	// server last heard it (the coordinator's own list on a coordinator).
	Down []quorum.ID `json:"down"`
	// Client and Admin are the server's client and admin addresses.
	Client string `json:"client"`
	Admin  string `json:"admin"`
	// Load is the last second's Sample.
	Load Sample `json:"load"`
}

// Member is one server in the Ensemble view: its report, or why there is
// none.
type Member struct {
	Self
	// Reachable is false when the member did not answer (Error says
	// why); its Role is then "unreachable".
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Lag is how many entries the member has applied fewer than the
	// leader, -1 when unknown (the leader's or its own report missing, or
	// another epoch).
	Lag int64 `json:"lag"`
}

// Group is one voting group of the forest and the tree its coordinator
// sends the group's messages down.
type Group struct {
	Index   int         `json:"index"`
	Members []quorum.ID `json:"members"`
	// Coordinator is 0 when no reachable member reports one.
	Coordinator quorum.ID `json:"coordinator"`
	// Edges are the tree's parent→child links from the coordinator, as the
	// protocol's topology computes them from the coordinator's down list.
	Edges [][2]quorum.ID `json:"edges"`
	Down  []quorum.ID    `json:"down"`
}

// Ensemble is the whole ensemble as one server sees it (GET
// /ui/api/ensemble).
type Ensemble struct {
	// AnsweredBy is the server that gathered the view.
	AnsweredBy quorum.ID `json:"answered_by"`
	// Leader is the global leader, as the leader itself reports; 0 when
	// no reachable member does.
	Leader   quorum.ID `json:"leader"`
	Epoch    uint64    `json:"epoch"`
	Trees    int       `json:"trees"`
	Children int       `json:"children"`
	Classic  bool      `json:"classic"`
	Cluster  string    `json:"cluster"`
	Members  []Member  `json:"members"`
	Groups   []Group   `json:"groups"`
	// At is when the view was gathered, in Unix milliseconds.
	At int64 `json:"at"`
}

// Who answers GET /ui/api/whoami.
type Who struct {
	Admin bool `json:"admin"`
	// Server is the answering server's id.
	Server quorum.ID `json:"server"`
}

// Stat is a znode's Stat, with the zxids in hex and the times in Unix
// milliseconds.
type Stat struct {
	Czxid          string `json:"czxid"`
	Mzxid          string `json:"mzxid"`
	Pzxid          string `json:"pzxid"`
	Ctime          int64  `json:"ctime"`
	Mtime          int64  `json:"mtime"`
	Version        int32  `json:"version"`
	Cversion       int32  `json:"cversion"`
	Aversion       int32  `json:"aversion"`
	EphemeralOwner string `json:"ephemeral_owner"`
	DataLength     int32  `json:"data_length"`
	NumChildren    int32  `json:"num_children"`
}

// ACL is one entry of a znode's ACL.
type ACL struct {
	Perms  int32  `json:"perms"`
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
}

// Znode answers GET /ui/api/znode: one znode as an unauthenticated client
// may read it. Data is base64 (JSON's encoding of bytes); DataError,
// ACLError and ChildrenError name a read the znode's ACL refuses. Stat is
// absent when the ACL refuses reading the znode at all.
type Znode struct {
	Path          string   `json:"path"`
	Data          []byte   `json:"data"`
	DataError     string   `json:"data_error,omitempty"`
	Stat          *Stat    `json:"stat,omitempty"`
	ACL           []ACL    `json:"acl"`
	ACLError      string   `json:"acl_error,omitempty"`
	Children      []string `json:"children"`
	ChildrenError string   `json:"children_error,omitempty"`
	// Recipe is the lock, election, semaphore or queue the children form,
	// when Recognize knows their layout.
	Recipe *Recipe `json:"recipe,omitempty"`
}

// Change is the body of POST and PUT /ui/api/znode. Data is base64.
// Version is the version a set expects (-1: any); a create makes a
// persistent znode open to everyone (world:anyone, all permissions).
type Change struct {
	Path    string `json:"path"`
	Data    []byte `json:"data"`
	Version int32  `json:"version"`
}
