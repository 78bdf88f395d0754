package transport

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// FaultKind names a fault command.
type FaultKind uint8

// The fault commands, by their keyword in the spec syntax.
const (
	FaultDrop         FaultKind = iota + 1 // drop PEER PROB [DIR]
	FaultDelay                             // delay PEER FIXED [JITTER] [DIR]
	FaultBlock                             // block PEER [DIR]
	FaultUnblock                           // unblock PEER [DIR]
	FaultIsolate                           // isolate
	FaultPause                             // pause
	FaultResume                            // resume
	FaultHeal                              // heal
	FaultSlowSnapshot                      // slowsnap PEER FIXED
)

var faultKeywords = map[string]FaultKind{
	"drop": FaultDrop, "delay": FaultDelay, "block": FaultBlock, "unblock": FaultUnblock,
	"isolate": FaultIsolate, "pause": FaultPause, "resume": FaultResume, "heal": FaultHeal,
	"slowsnap": FaultSlowSnapshot,
}

func (k FaultKind) String() string {
	for w, kk := range faultKeywords {
		if kk == k {
			return w
		}
	}
	return "?"
}

// maxFaultDelay bounds delays in a spec: a typo ("40m" for "40ms") should
// be an error, not a server that goes silent for forty minutes.
const maxFaultDelay = time.Minute

// FaultOp is one fault command.
type FaultOp struct {
	Kind   FaultKind
	Peer   gpaxos.ID // AllPeers for "*"
	Dir    Direction // Out unless the command says "in" or "both"
	Prob   float64   // drop
	Delay  time.Duration
	Jitter time.Duration
}

// FaultSpec is a sequence of fault commands, applied in order.
type FaultSpec []FaultOp

// ParseFaultSpec parses fault commands separated by ';' or newlines. The
// commands, where PEER is a server ID or '*' for every peer and DIR is
// "out" (messages this server sends to PEER, the default), "in" (messages
// it receives from PEER) or "both":
//
//	drop PEER PROB [DIR]            lose each message with probability PROB in [0, 1]
//	delay PEER FIXED [JITTER] [DIR] hold each message FIXED plus up to JITTER (Go durations, at most 1m)
//	block PEER [DIR]                cut the link
//	unblock PEER [DIR]              restore it ("unblock * both" also ends an isolation)
//	isolate                         cut every link, both ways
//	pause                           stop sending and delivering (a stalled process)
//	resume                          end a pause
//	heal                            remove every fault, including a pause
//	slowsnap PEER FIXED             hold each snapshot received from PEER FIXED longer (at most 1m),
//	                                as a large tree's takes to arrive; the other messages pass it
//
// Example: "drop 3 0.5; delay 2 40ms 10ms; block 4 in; isolate; heal".
func ParseFaultSpec(s string) (FaultSpec, error) {
	var spec FaultSpec
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' }) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		op, err := parseFaultOp(f)
		if err != nil {
			return nil, fmt.Errorf("transport: fault %q: %w", strings.TrimSpace(line), err)
		}
		spec = append(spec, op)
	}
	return spec, nil
}

func parseFaultOp(f []string) (FaultOp, error) {
	kind, ok := faultKeywords[strings.ToLower(f[0])]
	if !ok {
		return FaultOp{}, fmt.Errorf("unknown command %q", f[0])
	}
	op := FaultOp{Kind: kind, Dir: Out}
	args := f[1:]
	if kind == FaultIsolate || kind == FaultPause || kind == FaultResume || kind == FaultHeal {
		if len(args) != 0 {
			return op, fmt.Errorf("%s takes no arguments", kind)
		}
		return op, nil
	}
	if len(args) == 0 {
		return op, errors.New("missing peer")
	}
	peer, err := parsePeer(args[0])
	if err != nil {
		return op, err
	}
	op.Peer = peer
	args = args[1:]
	// An optional direction ends every linked command.
	if n := len(args); n > 0 {
		if d, ok := parseDir(args[n-1]); ok {
			op.Dir = d
			args = args[:n-1]
		}
	}
	switch kind {
	case FaultDrop:
		if len(args) != 1 {
			return op, errors.New("want drop PEER PROB [DIR]")
		}
		p, err := strconv.ParseFloat(args[0], 64)
		if err != nil || !(p >= 0 && p <= 1) {
			return op, fmt.Errorf("probability %q not in [0, 1]", args[0])
		}
		op.Prob = p
	case FaultDelay:
		if len(args) < 1 || len(args) > 2 {
			return op, errors.New("want delay PEER FIXED [JITTER] [DIR]")
		}
		if op.Delay, err = parseDelay(args[0]); err != nil {
			return op, err
		}
		if len(args) == 2 {
			if op.Jitter, err = parseDelay(args[1]); err != nil {
				return op, err
			}
		}
	case FaultSlowSnapshot:
		if len(args) != 1 || op.Dir != Out {
			return op, errors.New("want slowsnap PEER FIXED")
		}
		op.Dir = In
		if op.Delay, err = parseDelay(args[0]); err != nil {
			return op, err
		}
	default: // block, unblock
		if len(args) != 0 {
			return op, fmt.Errorf("want %s PEER [DIR]", kind)
		}
	}
	return op, nil
}

func parsePeer(s string) (gpaxos.ID, error) {
	if s == "*" {
		return AllPeers, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("peer %q is neither a server ID nor '*'", s)
	}
	return gpaxos.ID(v), nil
}

func parseDir(s string) (Direction, bool) {
	switch strings.ToLower(s) {
	case "out":
		return Out, true
	case "in":
		return In, true
	case "both":
		return Both, true
	}
	return 0, false
}

func parseDelay(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > maxFaultDelay {
		return 0, fmt.Errorf("duration %q not in [0, %v]", s, maxFaultDelay)
	}
	return d, nil
}

// Apply runs every command of spec on f, in order.
func (f *Faults) Apply(spec FaultSpec) {
	for _, op := range spec {
		switch op.Kind {
		case FaultDrop:
			f.SetDrop(op.Peer, op.Dir, op.Prob)
		case FaultDelay:
			f.SetDelay(op.Peer, op.Dir, op.Delay, op.Jitter)
		case FaultBlock:
			f.Block(op.Peer, op.Dir)
		case FaultUnblock:
			f.Unblock(op.Peer, op.Dir)
		case FaultIsolate:
			f.Isolate()
		case FaultPause:
			f.Pause()
		case FaultResume:
			f.Resume()
		case FaultHeal:
			f.Heal()
		case FaultSlowSnapshot:
			f.SetSnapshotHold(op.Peer, op.Delay)
		}
	}
}

// String formats op in the syntax of ParseFaultSpec.
func (op FaultOp) String() string {
	var b strings.Builder
	b.WriteString(op.Kind.String())
	switch op.Kind {
	case FaultDrop, FaultDelay, FaultBlock, FaultUnblock, FaultSlowSnapshot:
	default:
		return b.String()
	}
	if op.Peer == AllPeers {
		b.WriteString(" *")
	} else {
		fmt.Fprintf(&b, " %d", op.Peer)
	}
	switch op.Kind {
	case FaultDrop:
		fmt.Fprintf(&b, " %s", strconv.FormatFloat(op.Prob, 'g', -1, 64))
	case FaultDelay:
		fmt.Fprintf(&b, " %v", op.Delay)
		if op.Jitter != 0 {
			fmt.Fprintf(&b, " %v", op.Jitter)
		}
	case FaultSlowSnapshot:
		fmt.Fprintf(&b, " %v", op.Delay)
		return b.String()
	}
	if op.Dir != Out {
		fmt.Fprintf(&b, " %v", op.Dir)
	}
	return b.String()
}

// String formats spec in the syntax of ParseFaultSpec.
func (s FaultSpec) String() string {
	parts := make([]string, len(s))
	for i, op := range s {
		parts[i] = op.String()
	}
	return strings.Join(parts, "; ")
}

// Spec returns the rules in force as commands that, applied after a heal,
// reproduce them; an admin endpoint shows it.
func (f *Faults) Spec() FaultSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	var spec FaultSpec
	// AllPeers rules first: applying them clears the single-peer rules of
	// their kind, which must therefore come after.
	for _, l := range sortedLinks(f.blocked) {
		if f.blocked[l] {
			spec = append(spec, FaultOp{Kind: FaultBlock, Peer: l.peer, Dir: l.dir})
		} else {
			spec = append(spec, FaultOp{Kind: FaultUnblock, Peer: l.peer, Dir: l.dir})
		}
	}
	for _, l := range sortedLinks(f.drop) {
		spec = append(spec, FaultOp{Kind: FaultDrop, Peer: l.peer, Dir: l.dir, Prob: f.drop[l]})
	}
	for _, l := range sortedLinks(f.delay) {
		r := f.delay[l]
		spec = append(spec, FaultOp{Kind: FaultDelay, Peer: l.peer, Dir: l.dir, Delay: r.fixed, Jitter: r.jitter})
	}
	for _, l := range sortedLinks(f.snapHold) {
		spec = append(spec, FaultOp{Kind: FaultSlowSnapshot, Peer: l.peer, Dir: In, Delay: f.snapHold[l]})
	}
	if f.isolated {
		spec = append(spec, FaultOp{Kind: FaultIsolate})
	}
	if !isClosed(f.resumed) {
		spec = append(spec, FaultOp{Kind: FaultPause})
	}
	return spec
}

// sortedLinks orders the links of a rule map: by direction, then peer, with
// AllPeers (zero) first.
func sortedLinks[V any](m map[link]V) []link {
	return slices.SortedFunc(maps.Keys(m), func(a, b link) int {
		if a.dir != b.dir {
			return int(a.dir) - int(b.dir)
		}
		switch {
		case a.peer < b.peer:
			return -1
		case a.peer > b.peer:
			return 1
		}
		return 0
	})
}
