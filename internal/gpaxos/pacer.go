package gpaxos

// pacer spaces out one kind of request a server makes for a history it
// lacks: a coordinator's hello to its leader, a member's catch-up request
// to its coordinator. While it waits for the history of one epoch it asks
// at most once a heartbeat, since every answer carries a whole suffix. The
// first request for another epoch's history goes at once: after a leader
// change, the one before went out during the election, to a server that
// had nothing to give yet, and waiting out the rest of a heartbeat would
// lengthen every failover by up to one.
type pacer struct {
	last  int64 // tick of the last request; 0 before the first
	epoch Epoch // the epoch whose history was wanted last
}

// forEpoch notes that the history wanted is e's; another epoch than the
// last lifts the wait.
func (p *pacer) forEpoch(e Epoch) {
	if e != p.epoch {
		p.epoch, p.last = e, 0
	}
}

// waited reports whether a request may go at tick: none went yet, or the
// last went every ticks ago or more.
func (p *pacer) waited(tick, every int64) bool { return p.last == 0 || tick-p.last >= every }

// asked records a request at tick.
func (p *pacer) asked(tick int64) { p.last = tick }
