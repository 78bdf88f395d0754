package membership

import (
	"slices"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// Failure detection (seed 000 §III-A): every member heartbeats its parents
// and children in every tree each HeartbeatTicks; a neighbor silent for more
// than LeaseTicks has an expired lease and is reported to the Rooter (or, if
// it is the Rooter, to the takeover candidates). Because the trees are
// interior-node-disjoint, each server has about t+c·(its group's share)
// neighbors, and nobody, the Rooter included, watches everyone.

func (n *Node) tickHeartbeat() {
	if n.now < n.heartbeatAt {
		return
	}
	n.heartbeatAt = n.now + int64(n.cfg.HeartbeatTicks)
	for _, nb := range n.neighbors {
		n.send(Message{Type: MsgHeartbeat, To: nb})
	}
	// Probe recently departed servers, less often (see Node.departed).
	if n.now >= n.probeAt {
		n.probeAt = n.now + int64(n.cfg.RetryTicks)
		ids := make([]forest.ServerID, 0, len(n.departed))
		for id, until := range n.departed {
			if n.now > until {
				delete(n.departed, id)
				continue
			}
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			n.send(Message{Type: MsgHeartbeat, To: id})
		}
	}
}

// tickLeases reports the neighbors whose leases expired. When every one of
// at least two neighbors has gone silent (each for at least half a lease),
// the likelier story is that this node is cut off, not that all of them
// failed together: it reports nothing, so that an isolated server neither
// empties its view (an isolated Rooter) nor starts a takeover, and, healed,
// finds its way back through the heartbeats of the neighbors it kept.
func (n *Node) tickLeases() {
	var expired []forest.ServerID
	quiet := 0
	for _, nb := range n.neighbors {
		silent := n.now - n.lastHeard[nb]
		if silent > int64(n.cfg.LeaseTicks) {
			expired = append(expired, nb)
		}
		if 2*silent > int64(n.cfg.LeaseTicks) {
			quiet++
		}
	}
	if len(n.neighbors) >= 2 && quiet == len(n.neighbors) {
		return
	}
	for _, nb := range expired {
		n.leaseExpired(nb)
	}
}

// leaseExpired reports nb, at most once per RetryTicks while it stays
// silent and in the view.
func (n *Node) leaseExpired(nb forest.ServerID) {
	if at, ok := n.reportAt[nb]; ok && n.now < at {
		return
	}
	n.reportAt[nb] = n.now + int64(n.cfg.RetryTicks)
	n.stats.Suspicions++
	switch {
	case nb == n.view.Rooter:
		n.rooterDown(nb)
	case n.IsRooter():
		n.commit(forest.Change{Op: forest.OpLeave, Server: nb})
	default:
		n.send(Message{Type: MsgSuspect, To: n.view.Rooter, Subject: nb})
	}
}

// handleHeartbeat renews the sender's lease. A heartbeat from a member that
// is not a neighbor in this node's view is answered: the two views differ
// (one side has applied a change the other has not yet), and the answer
// keeps the sender's lease on this node alive until they agree. A heartbeat
// also compares views: a newer sender is asked for its view (the catch-up
// path for lost updates); a sender that is behind and not a member of this
// view is sent the view, so that a removed server learns it and rejoins.
func (n *Node) handleHeartbeat(m Message) {
	if n.election != nil && m.From == n.election.old {
		// The Rooter we were replacing is alive after all.
		n.election = nil
	}
	if _, ok := n.lastHeard[m.From]; ok {
		n.lastHeard[m.From] = n.now
	} else if !m.Reply && n.IsMember() && n.view.Member(m.From) {
		n.send(Message{Type: MsgHeartbeat, To: m.From, Reply: true})
	}
	switch {
	case m.View.Newer(n.view.ID):
		n.behind(m.View, m.From)
	case n.view.ID.Newer(m.View) && !n.view.Member(m.From):
		n.sendViewToStale(m.From)
	}
}
