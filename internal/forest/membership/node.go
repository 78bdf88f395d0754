package membership

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// Node is the membership and failure-detection state machine of one server.
// It is pure in the etcd-raft sense: Step takes a message, Tick advances its
// clock by one tick, and Outbox returns what it wants sent. It reads no
// clock, spawns nothing and draws no random numbers, so a deterministic
// harness can run hundreds of them in virtual time. A Node is not safe for
// concurrent use.
type Node struct {
	cfg   Config
	id    forest.ServerID
	addr  string
	now   int64
	view  View
	recv  *forest.Receiver
	out   []Message
	stats Stats

	// Joining (also after being removed while alive).
	contacts    []forest.ServerID
	nextContact int
	joinAt      int64 // next join attempt
	attempts    int
	wasMember   bool

	// Failure detection.
	heartbeatAt int64
	neighbors   []forest.ServerID
	lastHeard   map[forest.ServerID]int64
	reportAt    map[forest.ServerID]int64 // next time a suspicion of this server may be sent
	viewReqAt   int64                     // next time a view may be requested
	viewSentAt  map[forest.ServerID]int64 // last unsolicited view sent to a stale server

	// Updates that arrived ahead of their predecessors, by version, and
	// when to give up waiting for the gap to fill.
	pending  map[uint64]Message
	newest   ViewID          // newest view heard of
	newestAt forest.ServerID // a server that holds it
	gapAt    int64           // when to ask newestAt for the view

	election *election

	// Servers that left this node's view recently, with the tick until
	// which it keeps heartbeating them. If they are alive (a false
	// suspicion, or the other side of a healed partition), the heartbeats
	// make whichever side holds the older view adopt the newer one.
	departed map[forest.ServerID]int64
	probeAt  int64                    // next time to probe them
	members  map[forest.ServerID]bool // members of the current view

	// joinedAt holds, at the Rooter, the view in which each server it
	// admitted joined, to tell stale suspicions from fresh ones.
	joinedAt map[forest.ServerID]ViewID
}

// maxDeparted bounds the servers a node keeps probing after they left.
const maxDeparted = 256

// Stats counts what a node did, for tests and metrics.
type Stats struct {
	UpdatesApplied int // changes applied from MsgUpdate
	ViewsAdopted   int // full views adopted (join, catch-up, takeover)
	ViewRequests   int // full views asked for (joining, or lagging behind)
	Suspicions     int // reports of expired leases sent or acted on
	Takeovers      int // times this node became the Rooter by takeover
	Rejoins        int // times this node found itself removed and rejoined
}

func newNode(cfg Config, id forest.ServerID, addr string) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if id == forest.None {
		return nil, fmt.Errorf("membership: server id %d is reserved", uint32(forest.None))
	}
	return &Node{
		cfg: cfg, id: id, addr: addr,
		recv:       forest.NewReceiver(id, cfg.Window),
		lastHeard:  make(map[forest.ServerID]int64),
		reportAt:   make(map[forest.ServerID]int64),
		viewSentAt: make(map[forest.ServerID]int64),
		pending:    make(map[uint64]Message),
		departed:   make(map[forest.ServerID]int64),
		members:    make(map[forest.ServerID]bool),
		joinedAt:   make(map[forest.ServerID]ViewID),
	}, nil
}

// Bootstrap returns the node of the first server of an ensemble: the only
// member of view 1.1 and its Rooter (the paper configures the first node as
// the Rooter).
func Bootstrap(cfg Config, id forest.ServerID, addr string) (*Node, error) {
	n, err := newNode(cfg, id, addr)
	if err != nil {
		return nil, err
	}
	f, err := forest.New(cfg.Forest)
	if err != nil {
		return nil, err
	}
	if _, err := f.Join(id, addr); err != nil {
		return nil, err
	}
	n.view = View{ID: ViewID{Epoch: 1, Version: 1}, Rooter: id, Forest: f}
	n.viewChanged()
	return n, nil
}

// NewJoiner returns the node of a server that wants to join through any of
// contacts (members it knows of, tried in turn): it fetches a view from a
// contact, then asks the view's Rooter for admission and a color.
func NewJoiner(cfg Config, id forest.ServerID, addr string, contacts []forest.ServerID) (*Node, error) {
	n, err := newNode(cfg, id, addr)
	if err != nil {
		return nil, err
	}
	if len(contacts) == 0 {
		return nil, fmt.Errorf("membership: server %d has no contact to join through", id)
	}
	n.contacts = append([]forest.ServerID(nil), contacts...)
	return n, nil
}

// ID returns the server's id.
func (n *Node) ID() forest.ServerID { return n.id }

// View returns the node's current view (see View for ownership).
func (n *Node) View() View { return n.view }

// IsMember reports whether the node is in its own current view.
func (n *Node) IsMember() bool { return n.view.Member(n.id) }

// IsRooter reports whether the node is a member and the Rooter of its view.
func (n *Node) IsRooter() bool { return n.IsMember() && n.view.Rooter == n.id }

// Stats returns the node's counters.
func (n *Node) Stats() Stats { return n.stats }

// Now returns the node's clock, in ticks.
func (n *Node) Now() int64 { return n.now }

// Outbox returns the messages the node has produced since the last call, in
// the order produced, and forgets them.
func (n *Node) Outbox() []Message {
	out := n.out
	n.out = nil
	return out
}

func (n *Node) send(m Message) {
	m.From = n.id
	if m.View == (ViewID{}) {
		m.View = n.view.ID
	}
	n.out = append(n.out, m)
}

// Tick advances the node's clock by one tick and runs its timers.
func (n *Node) Tick() {
	n.now++
	n.tickGap()
	if !n.IsMember() {
		n.tickJoin()
		return
	}
	n.tickHeartbeat()
	n.tickLeases()
	n.tickElection()
}

// Step handles one message addressed to this node. Messages of unknown type,
// or addressed elsewhere, are ignored.
func (n *Node) Step(m Message) {
	if m.To != n.id || m.From == n.id {
		return
	}
	switch m.Type {
	case MsgViewReq:
		n.handleViewReq(m)
	case MsgView:
		n.handleView(m)
	case MsgJoin:
		n.handleJoin(m)
	case MsgUpdate:
		n.handleUpdate(m)
	case MsgHeartbeat:
		n.handleHeartbeat(m)
	case MsgSuspect:
		n.handleSuspect(m)
	case MsgRooterDown:
		n.handleRooterDown(m)
	case MsgAnnounce:
		n.handleAnnounce(m)
	}
}
