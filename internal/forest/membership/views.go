package membership

import "github.com/giraffe-coord/giraffe/internal/forest"

// How a node keeps its view current: full views on request, changes down the
// trees (held briefly when they arrive out of order), and the bookkeeping
// that follows every change of view.

// sendView sends the node's full view to to.
func (n *Node) sendView(to forest.ServerID) {
	if n.view.Forest == nil {
		return
	}
	s := n.view.Forest.Snapshot()
	n.send(Message{Type: MsgView, To: to, View: n.view.ID, Rooter: n.view.Rooter, Snapshot: &s})
}

// sendViewToStale sends the view to a server that showed an older view and
// is not a member of ours, at most once per RetryTicks: it has been removed
// (or its join was lost) and must learn it to rejoin.
func (n *Node) sendViewToStale(to forest.ServerID) {
	if last, ok := n.viewSentAt[to]; ok && n.now < last+int64(n.cfg.RetryTicks) {
		return
	}
	n.viewSentAt[to] = n.now
	n.sendView(to)
}

// requestView asks to for its full view, at most once per RetryTicks.
func (n *Node) requestView(to forest.ServerID) {
	if n.now < n.viewReqAt || to == n.id {
		return
	}
	n.viewReqAt = n.now + int64(n.cfg.RetryTicks)
	n.stats.ViewRequests++
	n.send(Message{Type: MsgViewReq, To: to})
}

func (n *Node) handleViewReq(m Message) {
	n.sendView(m.From)
}

// handleView adopts a full view if it is newer than the node's own, and
// forwards a disseminated copy down its tree.
func (n *Node) handleView(m Message) {
	forward := true
	if m.Disseminated {
		var deliver bool
		deliver, forward = n.recv.Observe(m.Tag, m.Color)
		if !deliver && !forward {
			return
		}
	}
	if m.Snapshot != nil && m.View.Newer(n.view.ID) {
		if f, err := forest.Restore(*m.Snapshot); err == nil && f.Config() == n.cfg.Forest {
			n.view = View{ID: m.View, Rooter: m.Rooter, Forest: f}
			n.stats.ViewsAdopted++
			n.viewChanged()
			n.drainPending()
		}
	}
	if m.Disseminated && forward {
		n.forwardCopy(m)
	}
}

// handleUpdate applies a change that follows the node's view directly, asks
// for the full view when it reveals a gap or a newer epoch, and forwards a
// disseminated copy down its tree (in the view after the change, so that a
// server that just joined gets it and one that just left does not).
func (n *Node) handleUpdate(m Message) {
	forward := true
	if m.Disseminated {
		var deliver bool
		deliver, forward = n.recv.Observe(m.Tag, m.Color)
		if !deliver && !forward {
			return
		}
	}
	switch {
	case n.view.Forest == nil || !m.View.Newer(n.view.ID):
		// Nothing to build on, or already applied.
	case m.View.Epoch == n.view.ID.Epoch && m.View.Version == n.view.ID.Version+1:
		n.applyUpdate(m)
		n.drainPending()
	case m.View.Epoch == n.view.ID.Epoch:
		// An update overtook an earlier one (copies travel different
		// trees): hold it for a while rather than fetch the whole view.
		if len(n.pending) < n.cfg.Window {
			n.pending[m.View.Version] = m
		}
		n.behind(m.View, m.Rooter)
	default:
		n.requestView(m.Rooter)
	}
	if m.Disseminated && forward {
		n.forwardCopy(m)
	}
}

// applyUpdate applies the change of m, which follows the view directly.
func (n *Node) applyUpdate(m Message) {
	if _, err := n.view.Forest.Apply(m.Change); err != nil {
		// Our forest disagrees with the Rooter's: start over from its
		// full view.
		n.requestView(m.Rooter)
		return
	}
	n.view.ID, n.view.Rooter = m.View, m.Rooter
	n.stats.UpdatesApplied++
	n.viewChanged()
}

// drainPending applies the held updates that now follow the view, and
// drops those the view has overtaken.
func (n *Node) drainPending() {
	for v, m := range n.pending {
		if m.View.Epoch != n.view.ID.Epoch || v <= n.view.ID.Version {
			delete(n.pending, v)
		}
	}
	for {
		m, ok := n.pending[n.view.ID.Version+1]
		if !ok {
			break
		}
		delete(n.pending, m.View.Version)
		before := n.view.ID
		n.applyUpdate(m)
		if n.view.ID == before {
			clear(n.pending)
			break
		}
	}
}

// behind notes that a newer view exists (seen in an update that cannot be
// applied yet, or in a neighbor's heartbeat) and who holds it. The node
// gives the missing updates RetryTicks to arrive down the trees before it
// asks that server for the whole view.
func (n *Node) behind(id ViewID, holder forest.ServerID) {
	if !id.Newer(n.newest) {
		return
	}
	n.newest, n.newestAt = id, holder
	if n.gapAt == 0 {
		n.gapAt = n.now + int64(n.cfg.RetryTicks)
	}
}

// tickGap asks for the full view when the node has known for RetryTicks of
// a view newer than its own.
func (n *Node) tickGap() {
	if !n.newest.Newer(n.view.ID) {
		n.gapAt = 0
		return
	}
	if n.now < n.gapAt {
		return
	}
	n.gapAt = n.now + int64(n.cfg.RetryTicks)
	n.requestView(n.newestAt)
}

// forwardCopy passes a disseminated copy to the node's children in the tree
// of the copy's color.
func (n *Node) forwardCopy(m Message) {
	if n.view.Forest == nil {
		return
	}
	for _, h := range forest.Forward(n.view.Forest, n.id, m.Color) {
		c := m
		c.To = h.To
		n.send(c)
	}
}

// disseminate sends m down every tree of the node's current view, starting
// at the roots; the node's own copies are handled in place.
func (n *Node) disseminate(m Message) {
	m.Disseminated = true
	for _, h := range forest.Start(n.view.Forest) {
		c := m
		c.Color, c.To = h.Color, h.To
		if h.To == n.id {
			if _, fwd := n.recv.Observe(c.Tag, c.Color); fwd {
				n.forwardCopy(c)
			}
			continue
		}
		n.send(c)
	}
}

// viewChanged brings everything that depends on the view up to date.
func (n *Node) viewChanged() {
	member := n.IsMember()
	if !member && n.wasMember {
		// Removed while alive (a false suspicion, or a takeover that
		// lost our join): join again through the members we know.
		n.stats.Rejoins++
		n.contacts = n.view.Forest.Servers()
		n.nextContact = 0
		n.joinAt = n.now
		n.attempts = 0
	}
	n.wasMember = member
	n.trackDeparted()
	if n.election != nil && (n.view.ID.Epoch > n.election.epoch || n.view.Rooter != n.election.old) {
		n.election = nil
	}
	n.neighbors = nil
	if member {
		n.neighbors = n.view.Forest.Neighbors(n.id)
	}
	keep := make(map[forest.ServerID]bool, len(n.neighbors))
	for _, nb := range n.neighbors {
		keep[nb] = true
		if _, ok := n.lastHeard[nb]; !ok {
			// A new neighbor gets a full lease from now.
			n.lastHeard[nb] = n.now
		}
	}
	for id := range n.lastHeard {
		if !keep[id] {
			delete(n.lastHeard, id)
		}
	}
	for id := range n.reportAt {
		if !n.view.Member(id) {
			delete(n.reportAt, id)
		}
	}
	for id, at := range n.viewSentAt {
		if n.now >= at+int64(n.cfg.RetryTicks) {
			delete(n.viewSentAt, id)
		}
	}
}

// trackDeparted updates the departed set from the change of membership
// since the last view.
func (n *Node) trackDeparted() {
	until := n.now + int64(100*n.cfg.LeaseTicks)
	for id := range n.members {
		if !n.view.Member(id) && id != n.id && len(n.departed) < maxDeparted {
			n.departed[id] = until
		}
	}
	clear(n.members)
	if n.view.Forest != nil {
		for _, id := range n.view.Forest.Servers() {
			n.members[id] = true
			delete(n.departed, id)
		}
	}
}
