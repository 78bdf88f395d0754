package peer

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// Faults is the transport's fault injector, changeable at run time and safe
// for concurrent use. Outgoing messages to a peer can be dropped with a
// probability, delayed (per-link order is kept), or blocked; isolation
// drops everything this server sends and receives.
type Faults struct {
	mu       sync.Mutex
	drop     map[gpaxos.ID]float64
	delay    map[gpaxos.ID]time.Duration
	block    map[gpaxos.ID]bool
	isolated bool
	rng      *rand.Rand
}

func newFaults() *Faults {
	return &Faults{drop: map[gpaxos.ID]float64{}, delay: map[gpaxos.ID]time.Duration{},
		block: map[gpaxos.ID]bool{}, rng: rand.New(rand.NewSource(time.Now().UnixNano()))}
}

// Drop makes messages to peer lost with probability p (0 turns it off).
func (f *Faults) Drop(peer gpaxos.ID, p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p <= 0 {
		delete(f.drop, peer)
	} else {
		f.drop[peer] = p
	}
}

// Delay holds messages to peer for d before sending them (0 turns it off).
func (f *Faults) Delay(peer gpaxos.ID, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d <= 0 {
		delete(f.delay, peer)
	} else {
		f.delay[peer] = d
	}
}

// Block drops every message to peer (a one-way partition) until Heal.
func (f *Faults) Block(peer gpaxos.ID, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if on {
		f.block[peer] = true
	} else {
		delete(f.block, peer)
	}
}

// Isolate cuts this server off: nothing it sends or receives gets through.
func (f *Faults) Isolate(on bool) {
	f.mu.Lock()
	f.isolated = on
	f.mu.Unlock()
}

// Heal removes every fault.
func (f *Faults) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.drop)
	clear(f.delay)
	clear(f.block)
	f.isolated = false
}

// outgoing decides the fate of a message to peer: dropped, or sent after
// delay (zero: now).
func (f *Faults) outgoing(peer gpaxos.ID) (drop bool, delay time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.isolated || f.block[peer] {
		return true, 0
	}
	if p := f.drop[peer]; p > 0 && f.rng.Float64() < p {
		return true, 0
	}
	return false, f.delay[peer]
}

// incoming reports whether a received message must be dropped.
func (f *Faults) incoming() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.isolated
}

// String describes the active faults in the syntax Apply accepts.
func (f *Faults) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	if f.isolated {
		parts = append(parts, "isolate")
	}
	for id, p := range f.drop {
		parts = append(parts, fmt.Sprintf("drop %d %g", id, p))
	}
	for id, d := range f.delay {
		parts = append(parts, fmt.Sprintf("delay %d %v", id, d))
	}
	for id := range f.block {
		parts = append(parts, fmt.Sprintf("block %d", id))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// Apply changes the faults by a spec of ';'-separated commands:
//
//	drop ID P       lose messages to ID with probability P
//	delay ID D      hold messages to ID for duration D (e.g. 40ms)
//	block ID        drop every message to ID (one-way partition)
//	unblock ID
//	isolate         drop everything sent and received
//	heal            remove every fault
//
// Nothing changes when the spec has an error.
func (f *Faults) Apply(spec string) error {
	var actions []func()
	for _, cmd := range strings.Split(spec, ";") {
		w := strings.Fields(cmd)
		if len(w) == 0 {
			continue
		}
		id := func() (gpaxos.ID, error) {
			if len(w) < 2 {
				return 0, fmt.Errorf("%q: missing server id", cmd)
			}
			n, err := strconv.ParseUint(w[1], 10, 64)
			if err != nil || n == 0 {
				return 0, fmt.Errorf("%q: bad server id", cmd)
			}
			return gpaxos.ID(n), nil
		}
		switch w[0] {
		case "drop":
			peer, err := id()
			if err != nil {
				return err
			}
			if len(w) != 3 {
				return fmt.Errorf("%q: want drop ID P", cmd)
			}
			p, err := strconv.ParseFloat(w[2], 64)
			if err != nil || p < 0 || p > 1 {
				return fmt.Errorf("%q: probability must be in [0,1]", cmd)
			}
			actions = append(actions, func() { f.Drop(peer, p) })
		case "delay":
			peer, err := id()
			if err != nil {
				return err
			}
			if len(w) != 3 {
				return fmt.Errorf("%q: want delay ID DURATION", cmd)
			}
			d, err := time.ParseDuration(w[2])
			if err != nil || d < 0 {
				return fmt.Errorf("%q: bad duration", cmd)
			}
			actions = append(actions, func() { f.Delay(peer, d) })
		case "block", "unblock":
			peer, err := id()
			if err != nil {
				return err
			}
			on := w[0] == "block"
			actions = append(actions, func() { f.Block(peer, on) })
		case "isolate":
			actions = append(actions, func() { f.Isolate(true) })
		case "heal":
			actions = append(actions, f.Heal)
		default:
			return fmt.Errorf("%q: unknown fault (drop, delay, block, unblock, isolate, heal)", cmd)
		}
	}
	for _, a := range actions {
		a()
	}
	return nil
}
