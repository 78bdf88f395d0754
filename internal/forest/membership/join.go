package membership

// Joining (seed 000 §III-A): a new server first fetches the view from any
// member (MsgViewReq to its contacts in turn), then asks the view's Rooter
// for admission and a color (MsgJoin with the version it holds). The Rooter
// answers with the change itself when the joiner was exactly one change
// behind, with the full view otherwise; either makes the joiner a member.
// Requests are repeated every RetryTicks; every third attempt also asks the
// next contact for a fresh view, in case the Rooter changed or failed.

func (n *Node) tickJoin() {
	if n.now < n.joinAt {
		return
	}
	n.joinAt = n.now + int64(n.cfg.RetryTicks)
	n.attempts++
	if n.view.Forest == nil || n.attempts%3 == 0 {
		if len(n.contacts) > 0 {
			c := n.contacts[n.nextContact%len(n.contacts)]
			n.nextContact++
			if c != n.id {
				n.stats.ViewRequests++
				n.send(Message{Type: MsgViewReq, To: c})
			}
		}
	}
	if n.view.Forest != nil {
		n.send(Message{Type: MsgJoin, To: n.view.Rooter, Addr: n.addr})
	}
}
