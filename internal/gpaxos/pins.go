package gpaxos

// This file keeps the log behind a snapshot for the servers receiving it.
// A large snapshot takes long to send (the transport streams it beside
// the other messages); meanwhile the sender goes on compacting. Were it to
// drop the entries after the snapshot it sent, the receiver, once it had
// installed it, would lag behind the newer snapshot and need that one in
// turn, for ever under a steady load. So a snapshot sent pins the log
// from its index; the receiver, once it has it, asks from there and gets
// the entries after it, the pin following it, until it stops asking:
// ZooKeeper's leader likewise queues every proposal for a follower it is
// sending a snapshot to.

// snapPin is a snapshot sent to a server: its index, the tick of the
// server's last request for a history while still behind it, and the tick
// the pin was set where it is.
type snapPin struct {
	index Zxid
	tick  int64
	since int64
}

// pinLimit is how long, in election timeouts, a pin keeps the log for a
// receiver that makes no progress (one that keeps failing to install what
// it is sent, say), which would otherwise make the sender hold an ever
// longer log; as ZooKeeper gives a learner initLimit ticks to sync.
const pinLimit = 100

// pinTicks is how long a pin outlives the receiver's last request: a
// server receiving a snapshot asks again at least once a heartbeat while
// the appends it cannot attach come in.
func (n *Node) pinTicks() int64 { return 2 * int64(n.cfg.ElectionTicks) }

// asking reports whether p's receiver asked within pinTicks.
func (n *Node) asking(p snapPin) bool { return n.tick-p.tick <= n.pinTicks() }

// pin records that a snapshot at index goes to server `to`, which asked
// from base. A pin it still holds for an older snapshot stays: that one
// is what it is receiving (the transport drops a snapshot sent while
// another is on its way).
func (n *Node) pin(to ID, base, index Zxid) {
	if to == None || to == n.id {
		return
	}
	if n.pins == nil {
		n.pins = map[ID]snapPin{}
	}
	p, ok := n.pins[to]
	if !ok || base >= p.index || !n.asking(p) {
		p.index, p.since = index, n.tick
	}
	p.tick = n.tick
	n.pins[to] = p
}

// pinReceived reports whether server `from`, asking from base, has
// received the snapshot pinned for it. The pin then follows it to base:
// the entries it is given take time to arrive and be written too, and a
// compaction meanwhile must not make it need a snapshot again. Once it has
// caught up it stops asking, and the pin lapses.
func (n *Node) pinReceived(from ID, base Zxid) bool {
	p, ok := n.pins[from]
	if !ok || base < p.index || !n.asking(p) {
		return false
	}
	n.pins[from] = snapPin{index: base, tick: n.tick, since: n.tick}
	return true
}

// keepFor returns the zxid after which a compaction to index keeps the
// log: the oldest snapshot still being received, if older than index. Pins
// whose receivers stopped asking, or made no progress for pinLimit
// election timeouts, are dropped.
func (n *Node) keepFor(index Zxid) Zxid {
	keep := index
	for id, p := range n.pins {
		if !n.asking(p) || n.tick-p.since > pinLimit*int64(n.cfg.ElectionTicks) {
			delete(n.pins, id)
			continue
		}
		keep = min(keep, p.index)
	}
	return keep
}
