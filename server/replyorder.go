package server

import "sync"

// replyOrder keeps a connection's replies in the order of its requests.
// Requests complete in that order anyway (the pipeline is FIFO), except a
// weak write answered before it is applied (weak.go): its early reply must
// still wait for every earlier request of the connection to be answered,
// so it is held until then and sent as soon as they are.
type replyOrder struct {
	mu sync.Mutex
	// q holds the connection's requests in the pipeline, in submission
	// order, from the first not yet answered.
	q []*proposal
}

// add files pr, about to be submitted.
func (o *replyOrder) add(pr *proposal) {
	o.mu.Lock()
	o.q = append(o.q, pr)
	o.mu.Unlock()
}

// early sends pr's early reply (send) now if every earlier request has been
// answered, or holds it until they are.
func (o *replyOrder) early(pr *proposal, send func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if pr.answered {
		return
	}
	pr.held = send
	o.flush()
}

// complete runs pr's completion (fn: its reply, or for a write answered
// early, the check of its committed result). Every earlier request has
// completed by then, so nothing waits before it.
func (o *replyOrder) complete(pr *proposal, fn func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fn()
	pr.answered, pr.held = true, nil
	o.flush()
}

// flush drops the answered requests at the head of q and sends the held
// early replies that are now first in line.
func (o *replyOrder) flush() {
	for len(o.q) > 0 {
		pr := o.q[0]
		if !pr.answered {
			if pr.held == nil {
				return
			}
			pr.held()
			pr.answered, pr.held = true, nil
		}
		o.q[0] = nil
		o.q = o.q[1:]
	}
}

// sent reports whether pr's reply was sent.
func (o *replyOrder) sent(pr *proposal) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return pr.answered
}
