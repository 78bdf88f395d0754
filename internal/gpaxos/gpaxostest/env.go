// Package gpaxostest drives several gpaxos Nodes from datadriven scripts
// (github.com/cockroachdb/datadriven) and prints everything they do, so that
// a script's transcript shows exactly what the protocol did, step by step.
//
// The environment plays the host of every node: it hands out each Ready,
// keeps each node's durable storage (hard state, snapshot, entries), moves
// messages through one in-flight queue in the order they were sent, and
// applies committed entries to a tiny application (the list of payloads).
// Nothing happens unless a script says so: ticks, deliveries, persists,
// crashes and partitions are explicit commands, and nodes draw no
// randomness unless asked to, so every run of a script is the same run.
// The commands are listed in internal/gpaxos/testdata/README.md and on
// Handle.
//
// The package is for tests only; production code never imports it.
package gpaxostest

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// ID is a server id.
type ID = gpaxos.ID

// Env is the interaction environment: the nodes, their storage, the network
// and the checks that run after every command.
type Env struct {
	out   strings.Builder
	quiet bool

	nodes []*node // in increasing id order
	msgs  []gpaxos.Message
	// side[id] is the partition side of id; messages between servers on
	// different sides are dropped when delivered. Absent means side 0.
	side     map[ID]int
	nextSide int
	// cuts are links that drop messages both ways (cut), beside the sides:
	// a server can be cut off from some servers and still reach others.
	cuts map[link]bool

	params params
	added  bool
	// confs names every configuration the env has seen by its hash, so
	// that hashes in messages print as the configuration they stand for.
	confs map[uint64]quorum.Config

	// Invariant state (see check.go).
	committed map[gpaxos.Zxid]gpaxos.Entry
	leaders   map[gpaxos.Epoch]ID
	// coords is the coordinator of each (group, group epoch,
	// configuration it was elected under) seen so far.
	coords map[[3]uint64]ID
	errs   []string
}

// params are the settings every node of the ensemble shares.
type params struct {
	topology    gpaxos.Topology
	heartbeat   int
	election    int
	maxBatch    int
	maxInflight int
	jitter      bool
	// orderDuringPersist: Config.OrderDuringPersist.
	orderDuringPersist bool
	// incarnations gives every node an incarnation (1000·id + its
	// generation), so that registration and lost state can be scripted.
	incarnations bool
}

// link is a pair of servers, the lower id first.
type link struct{ a, b ID }

func linkOf(a, b ID) link {
	if a > b {
		a, b = b, a
	}
	return link{a, b}
}

// node is one server as its host sees it.
type node struct {
	id    ID
	cfg   gpaxos.Config
	n     *gpaxos.Node // nil while crashed
	store storage
	// held is a Ready whose Early messages left and committed entries
	// applied, but whose persist, sends and Advance wait for a persist
	// command (process-ready sync=false).
	held  *gpaxos.Ready
	ticks int
	app   app
}

// storage is what survives a crash.
type storage struct {
	hs   gpaxos.HardState
	snap *gpaxos.Snapshot
	ents []gpaxos.Entry
}

// app is the application: the payloads of the normal entries applied, in
// order, up to applied.
type app struct {
	applied  gpaxos.Zxid
	payloads []string
}

// NewEnv returns an empty environment.
func NewEnv() *Env {
	return &Env{side: map[ID]int{}, cuts: map[link]bool{}, confs: map[uint64]quorum.Config{},
		committed: map[gpaxos.Zxid]gpaxos.Entry{}, leaders: map[gpaxos.Epoch]ID{},
		coords: map[[3]uint64]ID{}}
}

// printf writes to the transcript unless output is off (log-level none).
func (env *Env) printf(format string, args ...any) {
	if !env.quiet {
		fmt.Fprintf(&env.out, format, args...)
	}
}

// node returns the node with id, or nil.
func (env *Env) node(id ID) *node {
	for _, nd := range env.nodes {
		if nd.id == id {
			return nd
		}
	}
	return nil
}

// live returns the nodes that are running, in id order.
func (env *Env) live() []*node {
	var out []*node
	for _, nd := range env.nodes {
		if nd.n != nil {
			out = append(out, nd)
		}
	}
	return out
}

// registerConf records c so that its hash prints as c.
func (env *Env) registerConf(c quorum.Config) {
	env.confs[gpaxos.ConfigHash(c)] = c
}

// config returns a node's Config for the ensemble's parameters.
func (env *Env) config(id ID, voters quorum.Config, joining bool) gpaxos.Config {
	cfg := gpaxos.Config{ID: id, Voters: voters, Topology: env.params.topology,
		HeartbeatTicks: env.params.heartbeat, ElectionTicks: env.params.election,
		MaxBatch: env.params.maxBatch, MaxInflight: env.params.maxInflight, Joining: joining,
		OrderDuringPersist: env.params.orderDuringPersist}
	if env.params.incarnations {
		cfg.Incarnation = 1000*uint64(id) + 1
	}
	if env.params.jitter {
		cfg.Rand = rand.New(rand.NewSource(int64(id))).Intn
	} else {
		cfg.Rand = func(int) int { return 0 }
	}
	return cfg
}

// addNode starts a fresh node.
func (env *Env) addNode(id ID, voters quorum.Config, joining bool) error {
	if env.node(id) != nil {
		return fmt.Errorf("node %d exists", id)
	}
	cfg := env.config(id, voters, joining)
	n, err := gpaxos.NewNode(cfg)
	if err != nil {
		return err
	}
	env.registerConf(voters)
	env.nodes = append(env.nodes, &node{id: id, cfg: cfg, n: n})
	slices.SortFunc(env.nodes, func(a, b *node) int { return int(a.id) - int(b.id) })
	return nil
}

// send puts messages on the network.
func (env *Env) send(msgs []gpaxos.Message) { env.msgs = append(env.msgs, msgs...) }

// handleReady takes one Ready from nd and does what the host must: send
// Early, apply, persist, send Messages, Advance. With hold, it stops after
// applying; persist finishes the rest. While nd holds a Ready, the node
// hands out overlapped Readies: Early messages and committed entries
// only, which need nothing more.
func (env *Env) handleReady(nd *node, hold bool) {
	rd := nd.n.Ready()
	if rd.Overlapped {
		env.printf("> %d handling Ready (overlapping the held one)\n", nd.id)
	} else {
		env.printf("> %d handling Ready\n", nd.id)
	}
	env.printReady(rd, "  ")
	env.send(rd.Early)
	env.apply(nd, rd)
	if rd.Overlapped {
		return
	}
	if hold {
		env.printf("  (persist held: only Early left)\n")
		nd.held = &rd
		return
	}
	env.finishReady(nd, rd)
}

// finishReady persists rd, sends its Messages and advances the node.
func (env *Env) finishReady(nd *node, rd gpaxos.Ready) {
	env.persist(nd, rd)
	env.send(rd.Messages)
	nd.n.Advance()
	nd.held = nil
}

// persist writes what rd asks to stable storage (instantly: the env's disk
// never fails, crashes lose only what was never handed to it).
func (env *Env) persist(nd *node, rd gpaxos.Ready) {
	s := &nd.store
	if rd.HardState != nil && rd.WritesHardState(s.hs) {
		// As a host's storage does, a new commit point alone is not
		// written (Ready.WritesHardState).
		env.checkHardState(nd.id, s.hs, *rd.HardState)
		s.hs = *rd.HardState
	}
	if rd.Snapshot != nil {
		snap := *rd.Snapshot
		s.snap, s.ents = &snap, nil
	}
	if rd.TruncateAfter != nil {
		z := *rd.TruncateAfter
		i := 0
		for i < len(s.ents) && s.ents[i].Zxid <= z {
			i++
		}
		s.ents = s.ents[:i]
	}
	for _, e := range rd.Entries {
		if last := s.last(); e.Zxid <= last {
			env.violation("node %d: stored entry %v after %v (not in increasing order)", nd.id, e.Zxid, last)
		}
		if e.Type == gpaxos.EntryConfChange {
			if c, _, err := gpaxos.DecodeConfEntry(e.Data); err == nil {
				env.registerConf(c)
			}
		}
		s.ents = append(s.ents, e)
	}
}

// last returns the zxid of the last stored entry or the snapshot's.
func (s *storage) last() gpaxos.Zxid {
	if len(s.ents) > 0 {
		return s.ents[len(s.ents)-1].Zxid
	}
	if s.snap != nil {
		return s.snap.Index
	}
	return 0
}

// apply restores the application from rd's snapshot, if any, and applies
// rd's committed entries.
func (env *Env) apply(nd *node, rd gpaxos.Ready) {
	if rd.Snapshot != nil {
		nd.app = appFromSnapshot(rd.Snapshot)
	}
	for _, e := range rd.CommittedEntries {
		env.checkApply(nd, e)
		nd.app.applied = e.Zxid
		if e.Type == gpaxos.EntryNormal {
			nd.app.payloads = append(nd.app.payloads, string(e.Data))
		}
	}
}

// appFromSnapshot decodes the application state a snapshot holds.
func appFromSnapshot(s *gpaxos.Snapshot) app {
	a := app{applied: s.Index}
	if len(s.Data) > 0 {
		a.payloads = strings.Split(string(s.Data), " ")
	}
	return a
}

// crash stops nd: its node and held Ready are gone, and so is every
// message in flight to or from it.
func (env *Env) crash(nd *node) {
	env.printf("> %d crashed\n", nd.id)
	if nd.held != nil {
		rd := nd.held
		env.printf("  lost the held Ready:")
		if len(rd.Entries) > 0 {
			env.printf(" %d entries (%v..%v)", len(rd.Entries), rd.Entries[0].Zxid, rd.Entries[len(rd.Entries)-1].Zxid)
		}
		if rd.HardState != nil {
			env.printf(" HardState")
		}
		if n := len(rd.Messages); n > 0 {
			env.printf(" %d messages", n)
		}
		env.printf("\n")
	}
	nd.n, nd.held = nil, nil
	nd.app = app{}
	kept := env.msgs[:0]
	for _, m := range env.msgs {
		if m.From == nd.id || m.To == nd.id {
			env.printf("  dropped %s\n", env.formatMsg(m))
			continue
		}
		kept = append(kept, m)
	}
	env.msgs = kept
}

// loseState crashes nd if it runs and restarts it with empty storage as a
// new incarnation; recovering says whether its host noticed the loss (a
// damaged disk) or not (a replaced one, which looks new).
func (env *Env) loseState(nd *node, recovering bool) error {
	if nd.n != nil {
		env.crash(nd)
	}
	nd.store = storage{}
	nd.cfg.Incarnation++
	nd.cfg.Recovering = recovering
	env.printf("> %d lost its storage; incarnation %d, recovering %v\n", nd.id, nd.cfg.Incarnation, recovering)
	return env.restart(nd)
}

// restart starts nd again from its storage.
func (env *Env) restart(nd *node) error {
	s := nd.store
	var snap *gpaxos.Snapshot
	if s.snap != nil {
		c := *s.snap
		snap = &c
	}
	n, err := gpaxos.RestartNode(nd.cfg, s.hs, snap, slices.Clone(s.ents))
	if err != nil {
		return err
	}
	nd.n = n
	nd.ticks = 0
	if snap != nil {
		nd.app = appFromSnapshot(snap)
	}
	env.printf("> %d restarted from storage: %s\n", nd.id, env.formatStorageSummary(s))
	return nil
}

// deliverable reports whether m may travel now (no partition between its
// ends, its receiver running).
func (env *Env) deliverable(m gpaxos.Message) (bool, string) {
	if env.side[m.From] != env.side[m.To] {
		return false, "partition"
	}
	if env.cuts[linkOf(m.From, m.To)] {
		return false, "cut"
	}
	if nd := env.node(m.To); nd == nil || nd.n == nil {
		return false, "receiver down"
	}
	return true, ""
}

// filter selects messages in flight.
type filter struct {
	to    []ID // empty: any
	from  []ID // empty: any
	types []gpaxos.MsgType
	// hold: types that stay in flight (a transfer slower than the
	// exchange the script plays out, such as a snapshot's)
	hold []gpaxos.MsgType
	max  int // 0: no limit
}

func (f filter) match(m gpaxos.Message) bool {
	return (len(f.to) == 0 || slices.Contains(f.to, m.To)) &&
		(len(f.from) == 0 || slices.Contains(f.from, m.From)) &&
		(len(f.types) == 0 || slices.Contains(f.types, m.Type)) &&
		!slices.Contains(f.hold, m.Type)
}

// take removes and returns the messages matching f, in flight order.
func (env *Env) take(f filter) []gpaxos.Message {
	var got []gpaxos.Message
	kept := env.msgs[:0]
	for _, m := range env.msgs {
		if f.match(m) && (f.max == 0 || len(got) < f.max) {
			got = append(got, m)
			continue
		}
		kept = append(kept, m)
	}
	env.msgs = kept
	return got
}

// deliverTo steps every message matching f addressed to id, in order,
// printing them under a heading. It reports whether any moved.
func (env *Env) deliverTo(id ID, f filter) bool {
	f.to = []ID{id}
	msgs := env.take(f)
	if len(msgs) == 0 {
		return false
	}
	env.printf("> %d receiving messages\n", id)
	for _, m := range msgs {
		if ok, why := env.deliverable(m); !ok {
			env.printf("  dropped (%s) %s\n", why, env.formatMsg(m))
			continue
		}
		env.printf("  %s\n", env.formatMsg(m))
		env.node(id).n.Step(m)
	}
	return true
}

// drop removes the messages matching f without delivering them.
func (env *Env) drop(f filter) {
	for _, m := range env.take(f) {
		env.printf("  dropped %s\n", env.formatMsg(m))
	}
}

// stabilize hands out Readies and delivers messages among ids (all live
// nodes when empty) until nothing is left to do; messages of the hold
// types stay in flight.
func (env *Env) stabilize(ids []ID, hold []gpaxos.MsgType) error {
	for round := 0; round < 10000; round++ {
		busy := false
		for _, nd := range env.nodes {
			if nd.n == nil || len(ids) > 0 && !slices.Contains(ids, nd.id) {
				continue
			}
			if nd.held != nil {
				env.printf("> %d persisting held Ready\n", nd.id)
				env.finishReady(nd, *nd.held)
				busy = true
			}
			if nd.n.HasReady() {
				env.handleReady(nd, false)
				busy = true
			}
		}
		env.check()
		for _, nd := range env.nodes {
			if len(ids) > 0 && !slices.Contains(ids, nd.id) {
				continue
			}
			if env.deliverTo(nd.id, filter{hold: hold}) {
				busy = true
			}
		}
		env.check()
		if !busy {
			return nil
		}
	}
	return fmt.Errorf("did not stabilize in 10000 rounds")
}

// leaderNode returns the live node that leads the highest epoch, or nil.
func (env *Env) leaderNode() *node {
	var best *node
	for _, nd := range env.live() {
		st := nd.n.Status()
		if st.Leader && (best == nil || st.HardState.Promised > best.n.Status().HardState.Promised) {
			best = nd
		}
	}
	return best
}
