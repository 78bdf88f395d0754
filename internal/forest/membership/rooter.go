package membership

import "github.com/giraffe-coord/giraffe/internal/forest"

// The Rooter (seed 000 §III-A) holds the authoritative view: it admits
// servers and hands out their colors, removes servers whose leases were
// reported expired, bumps the version on every change and disseminates the
// change down the trees. In the replicated ensemble the global leader will
// play this role and its changes will be committed entries; here the Rooter
// is the paper's single manager, replaced by takeover when it fails.

// commit applies ch to the Rooter's view and disseminates it. It returns the
// update message and whether the change was applied.
func (n *Node) commit(ch forest.Change) (Message, bool) {
	if _, err := n.view.Forest.Apply(ch); err != nil {
		return Message{}, false
	}
	n.view.ID.Version++
	if ch.Op == forest.OpJoin {
		n.joinedAt[ch.Server] = n.view.ID
	} else {
		delete(n.joinedAt, ch.Server)
	}
	m := Message{Type: MsgUpdate, View: n.view.ID, Rooter: n.id, Change: ch,
		Tag: forest.MsgID{Origin: n.id, Seq: n.view.ID.Version}}
	n.viewChanged()
	n.disseminate(m)
	return m, true
}

// handleJoin admits a joiner. A server that is not the Rooter answers with
// its view, which names the Rooter to ask. A retry from a server already
// admitted gets the full view again.
func (n *Node) handleJoin(m Message) {
	if !n.IsRooter() {
		n.sendView(m.From)
		return
	}
	if n.view.Member(m.From) {
		n.sendView(m.From)
		return
	}
	prev := n.view.ID
	up, ok := n.commit(forest.Change{Op: forest.OpJoin, Server: m.From, Addr: m.Addr})
	if !ok {
		return
	}
	if m.View == prev {
		// The joiner holds the view just before its admission: the
		// change itself (with its color) is all it needs.
		up.To, up.Disseminated, up.Color = m.From, false, 0
		n.send(up)
		return
	}
	n.sendView(m.From)
}

// handleSuspect removes a server whose lease a neighbor reported expired.
// A report that reaches a server that is not the Rooter is answered with the
// view, which names the Rooter; a report from a server that is no longer a
// member tells it so the same way.
func (n *Node) handleSuspect(m Message) {
	if !n.IsRooter() || !n.view.Member(m.From) {
		if n.view.ID.Newer(m.View) {
			n.sendViewToStale(m.From)
		}
		return
	}
	if m.Subject == n.id || !n.view.Member(m.Subject) {
		return
	}
	if at, ok := n.joinedAt[m.Subject]; ok && at.Newer(m.View) {
		// The reporter had not yet seen the subject's latest admission:
		// the report is about its previous incarnation.
		return
	}
	n.stats.Suspicions++
	n.commit(forest.Change{Op: forest.OpLeave, Server: m.Subject})
}
