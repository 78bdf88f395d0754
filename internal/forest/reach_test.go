package forest

import "slices"

// The Giraffe paper's dissemination (§III-A, last paragraph), which the
// resilience tests use to check what the forest is built for: a message is
// copied once per tree, each copy tagged with the tree's color and sent to
// that tree's root; a server that receives the copy of color k forwards it
// to its children in tree k and nowhere else; receivers deliver the first
// copy and drop repeats. Because every server is interior in at most one
// tree (while the forest is disjoint), a crashed server stops the copy of
// at most one color, so any t-1 crashes leave one tree whose every interior
// server is alive, and its copy reaches every live server.
//
// Giraffe's servers do not disseminate this way: Group Paxos relays each
// group's entries down a tree of the group's own members
// (gpaxos.TreeTopology), one copy per server instead of t; docs/protocol.md
// §14 gives the measurements behind that choice.
//
// The paper phrases the forwarding rule as "a node delivers messages to its
// children only when it has the same color with the message tag". That is
// the same rule while the forest is disjoint, but wrong otherwise: a foreign
// server with children in tree k (a tree beyond disjointness, or one whose
// group is empty) would strand its subtree. Forwarding in the tree of the
// tag's color, whoever the forwarder is, is right in both cases.

// msgID identifies a disseminated message: the server that originated it and
// that server's sequence number for it, increasing over time (a membership
// version, a zxid).
type msgID struct {
	Origin ServerID
	Seq    uint64
}

// hop is one copy to send: to server To, tagged with tree color Color.
type hop struct {
	To    ServerID
	Color Color
}

// start returns the first hops of a message: one copy per tree, to that
// tree's root. A hop addressed to the originator itself must be handed to
// its own receiver like any other.
func start(f *Forest) []hop {
	hops := make([]hop, 0, len(f.trees))
	for k := range f.trees {
		if r := f.trees[k].root; r != nil {
			hops = append(hops, hop{To: r.id, Color: Color(k)})
		}
	}
	return hops
}

// forward returns the hops with which self passes on a copy of color k: one
// to each of its children in tree k, in ascending id order.
func forward(f *Forest, self ServerID, k Color) []hop {
	kids := f.Children(k, self)
	hops := make([]hop, len(kids))
	for i, c := range kids {
		hops[i] = hop{To: c, Color: k}
	}
	return hops
}

// receiver is one server's dissemination state: which copies of which
// messages it has seen. It is pure and bounded: per origin it remembers the
// messages within Window sequence numbers of the newest one seen, and treats
// anything older as a duplicate (the sliding window of replay protection),
// so an origin must not let a message trail its newest by Window or more.
type receiver struct {
	self    ServerID
	window  uint64
	origins map[ServerID]*originState
}

type originState struct {
	newest uint64
	seen   map[uint64]uint64 // seq -> mask of colors received
}

// defaultWindow is the per-origin window a receiver uses when given 0.
const defaultWindow = 1024

// newReceiver returns the receiver of server self, remembering window
// messages per origin (defaultWindow if window is 0).
func newReceiver(self ServerID, window int) *receiver {
	if window <= 0 {
		window = defaultWindow
	}
	return &receiver{self: self, window: uint64(window), origins: make(map[ServerID]*originState)}
}

// receive handles the copy of color k of message m at this server, in the
// forest f this server currently holds. deliver is true for the first copy
// of m, which the caller hands to the application; next lists the hops to
// forward this copy on. A copy whose color was already received, or whose
// message is older than the window, yields (false, nil): forwarding each
// color at most once is what stops copies from circling when trees change
// under messages in flight.
func (r *receiver) receive(f *Forest, m msgID, k Color) (deliver bool, next []hop) {
	deliver, pass := r.observe(m, k)
	if !pass {
		return false, nil
	}
	return deliver, forward(f, r.self, k)
}

// observe is receive without the forest: it records the copy and reports
// whether to deliver the message and whether to forward this copy (then
// with forward). A caller whose delivery changes the forest (a membership
// update) observes first, applies, then forwards in the new forest.
func (r *receiver) observe(m msgID, k Color) (deliver, forward bool) {
	if int(k) >= MaxTrees {
		return false, false
	}
	o := r.origins[m.Origin]
	if o == nil {
		o = &originState{seen: make(map[uint64]uint64)}
		r.origins[m.Origin] = o
	}
	if o.tooOld(m.Seq, r.window) {
		return false, false
	}
	if m.Seq > o.newest {
		o.newest = m.Seq
		for seq := range o.seen {
			if o.tooOld(seq, r.window) {
				delete(o.seen, seq)
			}
		}
	}
	mask := o.seen[m.Seq]
	bit := uint64(1) << k
	if mask&bit != 0 {
		return false, false
	}
	o.seen[m.Seq] = mask | bit
	return mask == 0, true
}

// tooOld reports whether seq trails the newest sequence number by window or
// more (written without an addition that could wrap).
func (o *originState) tooOld(seq, window uint64) bool {
	return o.newest >= window && seq <= o.newest-window
}

// forget drops what the receiver remembers of origin (a departed server).
func (r *receiver) forget(origin ServerID) { delete(r.origins, origin) }

// reach disseminates one message over f from the roots, with every server
// for which crashed returns true silent (it neither delivers nor forwards),
// and returns the live servers that delivered it, in ascending id order. It
// runs the receiver state machine of every server, hop by hop in FIFO order.
func reach(f *Forest, crashed func(ServerID) bool) []ServerID {
	m := msgID{Origin: None, Seq: 1}
	recv := make(map[ServerID]*receiver)
	var got []ServerID
	queue := start(f)
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if crashed(h.To) {
			continue
		}
		rc := recv[h.To]
		if rc == nil {
			rc = newReceiver(h.To, 1)
			recv[h.To] = rc
		}
		deliver, next := rc.receive(f, m, h.Color)
		if deliver {
			got = append(got, h.To)
		}
		queue = append(queue, next...)
	}
	slices.Sort(got)
	return got
}
