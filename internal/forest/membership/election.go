package membership

import (
	"slices"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// Rooter takeover (seed 000 §III-A: "if the Rooter fails, the root of a tree
// which maintains the latest membership view among the root group will be
// elected as the new Rooter").
//
// The candidates are the roots of the forest that the current view gives
// once the failed Rooter is removed from it: every server computes the same
// set from the same view, the set is never empty while anyone is left (in
// classic mode, a single star whose root is the Rooter, it is the star's new
// root), and its members are the servers the failed Rooter's departure makes
// coordinators anyway. A server whose lease on the Rooter expires sends
// MsgRooterDown to every candidate. Each candidate then runs rounds of
// ElectionTicks: it announces its view id to the other candidates (who
// answer with theirs), and at the end of a round the candidate with the
// newest view, the lowest id on a tie, takes over; the others start another
// round unless the winner's view has arrived meanwhile (so a winner that
// crashes mid-way is replaced by the next round). Every round also
// heartbeats the failed Rooter, and any heartbeat from it ends the election
// at that candidate. The new Rooter removes the
// failed one, opens a new epoch and disseminates the whole view, which every
// server adopts because its epoch is newer.
//
// This is the paper's mechanism and, like it, it assumes crash failures and
// messages that arrive within the timeouts: two candidates that cannot hear
// each other can both take over, and the newer epoch (then the lower id of
// the new Rooter, through the view ordering) wins once they can. Safety of
// the replicated state never depends on it: in the ensemble the Rooter is the
// global leader and membership changes are committed entries.

type election struct {
	old      forest.ServerID // the failed Rooter
	epoch    uint64          // the epoch of the view it ruled
	deadline int64           // end of the current round
	best     forest.ServerID // best bid heard this round (possibly ourselves)
	bestView ViewID
}

// candidates returns the takeover candidates for the failed Rooter old, in
// ascending id order.
func (n *Node) candidates(old forest.ServerID) []forest.ServerID {
	f := n.view.Forest.Clone()
	if f.Contains(old) {
		if _, err := f.Leave(old); err != nil {
			return nil
		}
	}
	var ids []forest.ServerID
	for _, r := range f.Roots() {
		if r != forest.None && !slices.Contains(ids, r) {
			ids = append(ids, r)
		}
	}
	slices.Sort(ids)
	return ids
}

// rooterDown reacts to the Rooter's expired lease.
func (n *Node) rooterDown(old forest.ServerID) {
	cands := n.candidates(old)
	for _, c := range cands {
		if c != n.id {
			n.send(Message{Type: MsgRooterDown, To: c, Subject: old})
		}
	}
	if slices.Contains(cands, n.id) {
		n.startElection(old)
	}
}

func (n *Node) handleRooterDown(m Message) {
	if n.view.Rooter != m.Subject {
		if n.view.ID.Newer(m.View) {
			n.sendViewToStale(m.From)
		}
		return
	}
	if n.IsMember() && slices.Contains(n.candidates(m.Subject), n.id) {
		n.startElection(m.Subject)
	}
}

// startElection opens a takeover round against old unless one is running.
func (n *Node) startElection(old forest.ServerID) {
	if n.election != nil && n.election.old == old {
		return
	}
	n.election = &election{old: old, epoch: n.view.ID.Epoch}
	n.newRound()
}

// newRound bids afresh to every other candidate. It also heartbeats the
// failed Rooter: a Rooter that is alive answers (it answers any member that
// is not its neighbor), and that answer ends the election here, so that one
// server's mistaken suspicion cannot depose a working Rooter.
func (n *Node) newRound() {
	e := n.election
	e.deadline = n.now + int64(n.cfg.ElectionTicks)
	e.best, e.bestView = n.id, n.view.ID
	n.send(Message{Type: MsgHeartbeat, To: e.old})
	for _, c := range n.candidates(e.old) {
		if c != n.id {
			n.send(Message{Type: MsgAnnounce, To: c, Subject: e.old})
		}
	}
}

func (n *Node) handleAnnounce(m Message) {
	if n.view.Rooter != m.Subject {
		if n.view.ID.Newer(m.View) {
			// A takeover already happened here: show the bidder.
			n.sendView(m.From)
		}
		return
	}
	if !n.IsMember() || !slices.Contains(n.candidates(m.Subject), n.id) {
		return
	}
	n.startElection(m.Subject)
	e := n.election
	if m.View.Newer(e.bestView) || m.View == e.bestView && m.From < e.best {
		e.best, e.bestView = m.From, m.View
	}
	if !m.Reply {
		n.send(Message{Type: MsgAnnounce, To: m.From, Subject: m.Subject, Reply: true})
	}
}

func (n *Node) tickElection() {
	e := n.election
	if e == nil || n.now < e.deadline {
		return
	}
	if e.best == n.id {
		n.takeOver(e.old)
		return
	}
	n.newRound()
}

// takeOver makes this node the Rooter in a new epoch without the failed
// Rooter, and disseminates the whole view.
func (n *Node) takeOver(old forest.ServerID) {
	n.election = nil
	if n.view.Forest.Contains(old) {
		if _, err := n.view.Forest.Leave(old); err != nil {
			return
		}
	}
	n.view.ID = ViewID{Epoch: n.view.ID.Epoch + 1, Version: n.view.ID.Version + 1}
	n.view.Rooter = n.id
	n.stats.Takeovers++
	n.viewChanged()
	s := n.view.Forest.Snapshot()
	n.disseminate(Message{Type: MsgView, View: n.view.ID, Rooter: n.id, Snapshot: &s,
		Tag: forest.MsgID{Origin: n.id, Seq: n.view.ID.Version}})
}
