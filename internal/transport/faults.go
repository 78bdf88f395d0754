package transport

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// AllPeers, given as the peer of a fault rule, makes it apply to every
// peer; it replaces the rules of that kind set for single peers.
const AllPeers gpaxos.ID = gpaxos.None

// Direction says which messages of a link a fault rule applies to.
type Direction uint8

const (
	// Out is the messages this server sends to the peer.
	Out Direction = 1 << iota
	// In is the messages this server receives from the peer.
	In
	// Both is Out and In.
	Both = Out | In
)

func (d Direction) String() string {
	switch d {
	case Out:
		return "out"
	case In:
		return "in"
	case Both:
		return "both"
	}
	return "none"
}

// dirs lists the single directions, for loops over a Direction mask.
var dirs = [...]Direction{Out, In}

// link is one directed link between this server and a peer.
type link struct {
	dir  Direction // Out or In, never Both
	peer gpaxos.ID
}

type delayRule struct {
	fixed, jitter time.Duration
}

// Faults injects network faults into one Transport: dropping, delaying and
// blocking the messages of chosen directed links, isolating the server and
// pausing it. It is safe for concurrent use and takes effect for the
// messages sent or received after each change; messages already queued or
// delayed keep their fate.
//
// A rule for one peer takes precedence over the rule of the same kind set
// for AllPeers; setting a rule for AllPeers clears the single-peer rules of
// its kind and direction.
type Faults struct {
	mu      sync.Mutex
	rng     *rand.Rand
	drop    map[link]float64
	delay   map[link]delayRule
	blocked map[link]bool
	// snapHold is how much longer a snapshot received from a peer is held
	// (links of direction In only).
	snapHold map[link]time.Duration
	isolated bool
	// resumed is closed while the transport is not paused; Pause replaces it
	// with an open channel that Resume closes, so waiters need no polling.
	resumed chan struct{}
	// lastDue is the delivery time of the latest delayed message per link:
	// later messages of the link never get an earlier time (per-link FIFO).
	lastDue map[link]time.Time
}

func newFaults(seed uint64) *Faults {
	if seed == 0 {
		seed = rand.Uint64()
	}
	f := &Faults{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	f.reset()
	f.resumed = make(chan struct{})
	close(f.resumed)
	return f
}

// reset clears every rule but the pause; f.mu must be held.
func (f *Faults) reset() {
	f.drop = map[link]float64{}
	f.delay = map[link]delayRule{}
	f.blocked = map[link]bool{}
	f.snapHold = map[link]time.Duration{}
	f.isolated = false
	f.lastDue = map[link]time.Time{}
}

// Seed reseeds the source of the drop and jitter decisions, so that a test
// can reproduce them.
func (f *Faults) Seed(seed uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// SetDrop makes the links to or from peer in dir lose each message with
// probability prob (clamped to [0, 1]).
func (f *Faults) SetDrop(peer gpaxos.ID, dir Direction, prob float64) {
	prob = min(max(prob, 0), 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	setRule(f.drop, peer, dir, prob, peer != AllPeers || prob != 0)
}

// SetDelay holds each message of the links to or from peer in dir for
// fixed plus a uniformly random duration below jitter, keeping the
// messages of each link in order.
func (f *Faults) SetDelay(peer gpaxos.ID, dir Direction, fixed, jitter time.Duration) {
	r := delayRule{fixed: max(fixed, 0), jitter: max(jitter, 0)}
	f.mu.Lock()
	defer f.mu.Unlock()
	setRule(f.delay, peer, dir, r, peer != AllPeers || r != delayRule{})
}

// SetSnapshotHold holds each message carrying a snapshot received from
// peer for d more, as if a large snapshot took that long to arrive; the
// other messages pass it, as they pass a snapshot on the bulk lane.
func (f *Faults) SetSnapshotHold(peer gpaxos.ID, d time.Duration) {
	d = max(d, 0)
	f.mu.Lock()
	defer f.mu.Unlock()
	setRule(f.snapHold, peer, In, d, peer != AllPeers || d != 0)
}

// holdSnapshot returns when a snapshot received from peer, otherwise due
// at due, is delivered.
func (f *Faults) holdSnapshot(peer gpaxos.ID, due time.Time) time.Time {
	if f == nil {
		return due
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return due.Add(lookup(f.snapHold, link{In, peer}))
}

// Block cuts the links to or from peer in dir: their messages are dropped.
func (f *Faults) Block(peer gpaxos.ID, dir Direction) {
	f.mu.Lock()
	defer f.mu.Unlock()
	setRule(f.blocked, peer, dir, true, true)
}

// Unblock restores the links to or from peer in dir. Unblocking AllPeers
// also ends an isolation.
func (f *Faults) Unblock(peer gpaxos.ID, dir Direction) {
	f.mu.Lock()
	defer f.mu.Unlock()
	setRule(f.blocked, peer, dir, false, peer != AllPeers)
	if peer == AllPeers && dir == Both {
		f.isolated = false
	}
}

// Isolate cuts this server from every peer in both directions, including
// peers added later, until Heal or Unblock(AllPeers, Both).
func (f *Faults) Isolate() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.isolated = true
}

// Heal removes every rule and resumes the transport if paused.
func (f *Faults) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reset()
	f.resumeLocked()
}

// Pause stops the transport as a stopped process would be stopped: nothing
// is written to peers and nothing is delivered; Send keeps queueing (and
// drops once queues are full) and received messages wait in the inbox
// until it is full, after which the connections stop being read and TCP
// pushes back on the senders. Resume lets everything held go out in order.
func (f *Faults) Pause() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.resumed:
		f.resumed = make(chan struct{})
	default: // already paused
	}
}

// Resume ends a Pause.
func (f *Faults) Resume() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resumeLocked()
}

func (f *Faults) resumeLocked() {
	select {
	case <-f.resumed:
	default:
		close(f.resumed)
	}
}

// Paused reports whether the transport is paused.
func (f *Faults) Paused() bool {
	select {
	case <-f.gate():
		return false
	default:
		return true
	}
}

// open is the gate of a transport without fault injection.
var open = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// gate returns a channel that is closed once the transport is not paused;
// on a nil Faults (no fault injection) it is always closed.
func (f *Faults) gate() <-chan struct{} {
	if f == nil {
		return open
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resumed
}

// route decides the fate of one message on the link (dir, peer) at now:
// dropped (with the reason), or due for delivery at the returned time. A
// nil Faults (no fault injection) delivers everything at once.
func (f *Faults) route(dir Direction, peer gpaxos.ID, now time.Time) (due time.Time, drop dropReason) {
	if f == nil {
		return now, dropNone
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := link{dir, peer}
	if f.isolated || lookup(f.blocked, l) {
		return time.Time{}, dropBlocked
	}
	if p := lookup(f.drop, l); p > 0 && f.rng.Float64() < p {
		return time.Time{}, dropFault
	}
	due = now
	if r := lookup(f.delay, l); r != (delayRule{}) {
		due = now.Add(r.fixed)
		if r.jitter > 0 {
			due = due.Add(time.Duration(f.rng.Int64N(int64(r.jitter))))
		}
	}
	if last, ok := f.lastDue[l]; ok {
		if last.After(due) {
			due = last
		} else if !last.After(now) {
			delete(f.lastDue, l) // expired: keeps the map as small as the delayed links
		}
	}
	if due.After(now) {
		f.lastDue[l] = due
	}
	return due, dropNone
}

// setRule sets (or, when !keep, removes) the rule of peer in dir. A rule
// for AllPeers clears the single-peer rules of the same kind and direction.
// A single peer's rule is kept even when it is the zero value, because it
// then overrides the AllPeers rule ("drop * 0.5; drop 3 0" spares peer 3).
func setRule[V any](rules map[link]V, peer gpaxos.ID, dir Direction, v V, keep bool) {
	for _, d := range dirs {
		if dir&d == 0 {
			continue
		}
		if peer == AllPeers {
			for l := range rules {
				if l.dir == d {
					delete(rules, l)
				}
			}
		}
		if keep {
			rules[link{d, peer}] = v
		} else {
			delete(rules, link{d, peer})
		}
	}
}

// lookup returns the rule of l, or else the rule of l's direction for all
// peers.
func lookup[V any](rules map[link]V, l link) V {
	if v, ok := rules[l]; ok {
		return v
	}
	return rules[link{l.dir, AllPeers}]
}
