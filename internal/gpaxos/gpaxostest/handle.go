package gpaxostest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// Handle runs one datadriven directive and returns its transcript. A
// directive is one command line; its input lines, if any, are further
// commands run in order under the same heading. Errors of the nodes (a
// refused proposal) print as output; a malformed command fails the test, and
// so does a broken invariant (check.go), which also prints.
//
// Commands (internal/gpaxos/testdata/README.md has the details):
//
//	add-nodes N | groups=(1 2 3, 4 5 6) [topology=star|tree] [fanout=F]
//	          [heartbeat=H] [election=E] [max-batch=B] [max-inflight=I] [jitter=true]
//	join ID group=G [from=ID]
//	tick [IDs] [n=N] [stabilize=true]
//	propose ID DATA...
//	propose-conf-change ID add=SERVER group=G | remove=SERVER [context=TEXT]
//	process-ready IDs [sync=false]
//	persist IDs
//	deliver-msgs [IDs] [from=IDs] [type=T|(T,...)] [n=K] [drop=IDs]
//	stabilize [IDs]
//	crash ID / restart ID
//	partition IDs / cut IDs with=IDs / heal
//	status [IDs] / storage ID / msgs
//	compact ID ZXID
//	log-level none|info
func (env *Env) Handle(t testing.TB, d datadriven.TestData) string {
	env.out.Reset()
	err := env.handleLine(t, d.Cmd, d.CmdArgs)
	for _, line := range strings.Split(d.Input, "\n") {
		if err != nil || strings.TrimSpace(line) == "" {
			continue
		}
		cmd, args, perr := datadriven.ParseLine(line)
		if perr != nil {
			t.Fatalf("%s: %v", d.Pos, perr)
		}
		err = env.handleLine(t, cmd, args)
	}
	env.check()
	if err != nil {
		fmt.Fprintf(&env.out, "%v\n", err)
	}
	if len(env.errs) > 0 {
		for _, e := range env.errs {
			fmt.Fprintf(&env.out, "INVARIANT VIOLATED: %s\n", e)
			t.Errorf("%s: invariant violated: %s", d.Pos, e)
		}
		env.errs = nil
	}
	if env.out.Len() == 0 {
		return "ok"
	}
	return env.out.String()
}

// usageError is a malformed command: the script is wrong, not the protocol.
type usageError struct{ error }

func (env *Env) handleLine(t testing.TB, cmd string, args []datadriven.CmdArg) error {
	err := env.dispatch(cmd, args)
	var u usageError
	if errors.As(err, &u) {
		t.Fatalf("%s: %v", cmd, u.error)
	}
	return err
}

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func (env *Env) dispatch(cmd string, args []datadriven.CmdArg) error {
	a := argList(args)
	switch cmd {
	case "add-nodes":
		return env.handleAddNodes(a)
	case "join":
		return env.handleJoin(a)
	case "tick":
		return env.handleTick(a)
	case "propose":
		return env.handlePropose(a)
	case "propose-conf-change":
		return env.handleProposeConfChange(a)
	case "process-ready":
		return env.handleProcessReady(a)
	case "persist":
		return env.handlePersist(a)
	case "deliver-msgs":
		return env.handleDeliverMsgs(a)
	case "stabilize":
		ids, err := a.ids()
		if err != nil {
			return err
		}
		hold, err := a.msgTypes("hold")
		if err != nil {
			return err
		}
		return env.stabilize(ids, hold)
	case "crash":
		nd, err := env.liveArg(a)
		if err != nil {
			return err
		}
		env.crash(nd)
		return nil
	case "restart":
		return env.handleRestart(a)
	case "wipe", "lose-state":
		ids, err := a.ids()
		if err != nil || len(ids) != 1 || env.node(ids[0]) == nil {
			return usagef("%s ID", cmd)
		}
		return env.loseState(env.node(ids[0]), cmd == "lose-state")
	case "partition":
		return env.handlePartition(a)
	case "cut":
		return env.handleCut(a)
	case "heal":
		env.side, env.cuts = map[ID]int{}, map[link]bool{}
		env.printf("healed\n")
		return nil
	case "status":
		return env.handleStatus(a)
	case "storage":
		return env.handleStorage(a)
	case "msgs":
		for _, m := range env.msgs {
			env.printf("%s\n", env.formatMsg(m))
		}
		return nil
	case "compact":
		return env.handleCompact(a)
	case "log-level":
		if len(a) != 1 {
			return usagef("log-level none|info")
		}
		switch a[0].Key {
		case "none":
			env.quiet = true
		case "info":
			env.quiet = false
		default:
			return usagef("unknown log level %q", a[0].Key)
		}
		return nil
	}
	return usagef("unknown command %q", cmd)
}

// argList wraps a command's arguments with lookups.
type argList []datadriven.CmdArg

// ids returns the positional (key-only) arguments as server ids.
func (a argList) ids() ([]ID, error) {
	var out []ID
	for _, arg := range a {
		if len(arg.Vals) > 0 {
			continue
		}
		id, err := strconv.ParseUint(arg.Key, 10, 64)
		if err != nil {
			return nil, usagef("bad id %q", arg.Key)
		}
		out = append(out, ID(id))
	}
	return out, nil
}

// vals returns the values of key, split on commas and spaces, or nil.
func (a argList) vals(key string) []string {
	for _, arg := range a {
		if arg.Key == key {
			var out []string
			for _, v := range arg.Vals {
				out = append(out, strings.Fields(strings.ReplaceAll(v, ",", " "))...)
			}
			return out
		}
	}
	return nil
}

func (a argList) has(key string) bool {
	for _, arg := range a {
		if arg.Key == key {
			return true
		}
	}
	return false
}

// int returns key's integer value, or def.
func (a argList) int(key string, def int) (int, error) {
	v := a.vals(key)
	if v == nil {
		return def, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil {
		return 0, usagef("%s: %v", key, err)
	}
	return n, nil
}

// bool returns key's boolean value, or def.
func (a argList) bool(key string, def bool) (bool, error) {
	v := a.vals(key)
	if !a.has(key) {
		return def, nil
	}
	if len(v) == 0 {
		return true, nil
	}
	b, err := strconv.ParseBool(v[0])
	if err != nil {
		return false, usagef("%s: %v", key, err)
	}
	return b, nil
}

// idVals returns key's values as ids.
func (a argList) idVals(key string) ([]ID, error) {
	var out []ID
	for _, v := range a.vals(key) {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, usagef("%s: bad id %q", key, v)
		}
		out = append(out, ID(id))
	}
	return out, nil
}

// parseZxid reads "epoch:counter" or a plain number.
func parseZxid(s string) (gpaxos.Zxid, error) {
	if e, c, ok := strings.Cut(s, ":"); ok {
		ev, err1 := strconv.ParseUint(e, 10, 32)
		cv, err2 := strconv.ParseUint(c, 10, 32)
		if err1 != nil || err2 != nil {
			return 0, usagef("bad zxid %q", s)
		}
		return gpaxos.MakeZxid(gpaxos.Epoch(ev), uint32(cv)), nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, usagef("bad zxid %q", s)
	}
	return gpaxos.Zxid(v), nil
}

// liveArg returns the one running node its arguments name.
func (env *Env) liveArg(a argList) (*node, error) {
	ids, err := a.ids()
	if err != nil {
		return nil, err
	}
	if len(ids) != 1 {
		return nil, usagef("want one node id")
	}
	return env.liveNode(ids[0])
}

// liveNode returns node id, which must be running.
func (env *Env) liveNode(id ID) (*node, error) {
	nd := env.node(id)
	if nd == nil {
		return nil, usagef("no node %d", id)
	}
	if nd.n == nil {
		return nil, fmt.Errorf("node %d is down", id)
	}
	return nd, nil
}

// nodesArg returns the nodes named by ids, or every live node when none.
func (env *Env) nodesArg(a argList) ([]*node, error) {
	ids, err := a.ids()
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return env.live(), nil
	}
	var out []*node
	for _, id := range ids {
		nd, err := env.liveNode(id)
		if err != nil {
			return nil, err
		}
		out = append(out, nd)
	}
	return out, nil
}

func (env *Env) handleAddNodes(a argList) error {
	if env.added {
		return usagef("add-nodes runs once; use join to add servers")
	}
	var voters quorum.Config
	star := true
	if g := groupsArg(a); g != nil {
		for _, grp := range g {
			var members []ID
			for _, s := range strings.Fields(strings.ReplaceAll(grp, ",", " ")) {
				id, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					return usagef("groups: bad id %q", s)
				}
				members = append(members, ID(id))
			}
			voters.Groups = append(voters.Groups, members)
		}
		star = false
	} else {
		ids, err := a.ids()
		if err != nil || len(ids) != 1 {
			return usagef("add-nodes N or add-nodes groups=(...)")
		}
		var g []ID
		for id := ID(1); id <= ids[0]; id++ {
			g = append(g, id)
		}
		voters.Groups = [][]ID{g}
	}
	if v := a.vals("topology"); v != nil {
		switch v[0] {
		case "star":
			star = true
		case "tree":
			star = false
		default:
			return usagef("topology star|tree")
		}
	}
	fanout, err := a.int("fanout", 2)
	if err != nil {
		return err
	}
	p := params{topology: gpaxos.TreeTopology{Fanout: fanout}}
	if star {
		p.topology = gpaxos.StarTopology{}
	}
	for _, x := range []struct {
		key string
		dst *int
		def int
	}{{"heartbeat", &p.heartbeat, 1}, {"election", &p.election, 3},
		{"max-batch", &p.maxBatch, 0}, {"max-inflight", &p.maxInflight, 0}} {
		if *x.dst, err = a.int(x.key, x.def); err != nil {
			return err
		}
	}
	if p.jitter, err = a.bool("jitter", false); err != nil {
		return err
	}
	if p.incarnations, err = a.bool("incarnations", false); err != nil {
		return err
	}
	if p.orderDuringPersist, err = a.bool("order-during-persist", false); err != nil {
		return err
	}
	env.params, env.added = p, true
	for _, g := range voters.Groups {
		for _, id := range g {
			if err := env.addNode(id, voters, false); err != nil {
				return err
			}
		}
	}
	topo := "star"
	if !star {
		topo = fmt.Sprintf("tree fanout %d", fanout)
	}
	env.printf("voters %s, topology %s, heartbeat %d, election %d ticks\n",
		formatConfig(voters), topo, p.heartbeat, p.election)
	return nil
}

// groupsArg returns the groups of groups=(...), each a string of ids, or
// nil. Both groups=(1 2 3, 4 5 6) and groups=((1,2,3),(4,5,6)) work.
func groupsArg(a argList) []string {
	for _, arg := range a {
		if arg.Key != "groups" {
			continue
		}
		var out []string
		for _, v := range arg.Vals {
			out = append(out, strings.Trim(v, "() "))
		}
		return out
	}
	return nil
}

func (env *Env) handleJoin(a argList) error {
	ids, err := a.ids()
	if err != nil || len(ids) != 1 {
		return usagef("join ID group=G [from=ID]")
	}
	g, err := a.int("group", -1)
	if err != nil {
		return err
	}
	from := env.leaderNode()
	if f, err := a.idVals("from"); err != nil {
		return err
	} else if len(f) == 1 {
		if from, err = env.liveNode(f[0]); err != nil {
			return err
		}
	}
	if from == nil {
		return usagef("join: no leader to take the configuration from; name one with from=")
	}
	voters, err := gpaxos.ApplyConfChange(from.n.Voters(), gpaxos.ConfChange{Op: gpaxos.ConfAddServer, Server: ids[0], Group: g})
	if err != nil {
		return err
	}
	if err := env.addNode(ids[0], voters, true); err != nil {
		return err
	}
	env.printf("%d joins with voters %s\n", ids[0], formatConfig(voters))
	return nil
}

func (env *Env) handleTick(a argList) error {
	nodes, err := env.nodesArg(a)
	if err != nil {
		return err
	}
	k, err := a.int("n", 1)
	if err != nil {
		return err
	}
	stab, err := a.bool("stabilize", false)
	if err != nil {
		return err
	}
	hold, err := a.msgTypes("hold")
	if err != nil {
		return err
	}
	for i := 0; i < k; i++ {
		for _, nd := range nodes {
			if nd.n != nil {
				nd.n.Tick()
				nd.ticks++
			}
		}
		if stab {
			if err := env.stabilize(nil, hold); err != nil {
				return err
			}
		}
	}
	return nil
}

func (env *Env) handlePropose(a argList) error {
	if len(a) < 2 {
		return usagef("propose ID DATA...")
	}
	nd, err := env.liveArg(a[:1])
	if err != nil {
		return err
	}
	for _, arg := range a[1:] {
		if err := nd.n.Propose([]byte(arg.String())); err != nil {
			return err
		}
	}
	return nil
}

func (env *Env) handleProposeConfChange(a argList) error {
	if len(a) < 2 {
		return usagef("propose-conf-change ID add=S group=G | remove=S")
	}
	nd, err := env.liveArg(a[:1])
	if err != nil {
		return err
	}
	var cc gpaxos.ConfChange
	if s, err := a.idVals("add"); err != nil {
		return err
	} else if len(s) == 1 {
		g, err := a.int("group", -1)
		if err != nil {
			return err
		}
		cc = gpaxos.ConfChange{Op: gpaxos.ConfAddServer, Server: s[0], Group: g}
	}
	if s, err := a.idVals("remove"); err != nil {
		return err
	} else if len(s) == 1 {
		cc = gpaxos.ConfChange{Op: gpaxos.ConfRemoveServer, Server: s[0]}
	}
	if cc.Op == 0 {
		return usagef("propose-conf-change: add= or remove=")
	}
	var ctx []byte
	if v := a.vals("context"); v != nil {
		ctx = []byte(strings.Join(v, " "))
	}
	if next, err := gpaxos.ApplyConfChange(nd.n.Voters(), cc); err == nil {
		env.registerConf(next)
	}
	return nd.n.ProposeConfChange(cc, ctx)
}

func (env *Env) handleProcessReady(a argList) error {
	nodes, err := env.nodesArg(a)
	if err != nil {
		return err
	}
	sync, err := a.bool("sync", true)
	if err != nil {
		return err
	}
	for _, nd := range nodes {
		if nd.held != nil && !sync {
			return fmt.Errorf("node %d holds a Ready; persist it first", nd.id)
		}
		if !nd.n.HasReady() {
			env.printf("> %d has no Ready\n", nd.id)
			continue
		}
		env.handleReady(nd, !sync)
		env.check()
	}
	return nil
}

func (env *Env) handlePersist(a argList) error {
	nodes, err := env.nodesArg(a)
	if err != nil {
		return err
	}
	for _, nd := range nodes {
		if nd.held == nil {
			if len(a) > 0 {
				env.printf("> %d holds no Ready\n", nd.id)
			}
			continue
		}
		env.printf("> %d persisting held Ready\n", nd.id)
		env.finishReady(nd, *nd.held)
		env.check()
	}
	return nil
}

func (env *Env) handleDeliverMsgs(a argList) error {
	var f filter
	var err error
	if f.to, err = a.ids(); err != nil {
		return err
	}
	if f.from, err = a.idVals("from"); err != nil {
		return err
	}
	if f.types, err = a.msgTypes("type"); err != nil {
		return err
	}
	if f.max, err = a.int("n", 0); err != nil {
		return err
	}
	drop, err := a.idVals("drop")
	if err != nil {
		return err
	}
	if len(drop) > 0 {
		df := f
		df.to = drop
		env.printf("> dropping messages\n")
		env.drop(df)
	}
	if len(f.to) == 0 && len(drop) == 0 {
		for _, nd := range env.nodes {
			f.to = append(f.to, nd.id)
		}
	}
	for _, id := range f.to {
		if env.node(id) == nil {
			return usagef("no node %d", id)
		}
		env.deliverTo(id, f)
		env.check()
	}
	return nil
}

// msgTypes parses the message type names of key (`type=T` or
// `type=(T,...)`).
func (a argList) msgTypes(key string) ([]gpaxos.MsgType, error) {
	var ts []gpaxos.MsgType
	for _, t := range a.vals(key) {
		mt, ok := msgType(t)
		if !ok {
			return nil, usagef("unknown message type %q", t)
		}
		ts = append(ts, mt)
	}
	return ts, nil
}

// msgType parses a message type name.
func msgType(s string) (gpaxos.MsgType, bool) {
	s = strings.TrimPrefix(s, "Msg")
	for t := gpaxos.MsgType(1); t.String() != "?"; t++ {
		if t.String() == s {
			return t, true
		}
	}
	return 0, false
}

func (env *Env) handleRestart(a argList) error {
	ids, err := a.ids()
	if err != nil || len(ids) != 1 {
		return usagef("restart ID")
	}
	nd := env.node(ids[0])
	if nd == nil {
		return usagef("no node %d", ids[0])
	}
	if nd.n != nil {
		return fmt.Errorf("node %d is running", ids[0])
	}
	return env.restart(nd)
}

func (env *Env) handlePartition(a argList) error {
	ids, err := a.ids()
	if err != nil || len(ids) == 0 {
		return usagef("partition IDs")
	}
	env.nextSide++
	for _, id := range ids {
		env.side[id] = env.nextSide
	}
	var sides []string
	seen := map[int]bool{}
	for _, nd := range env.nodes {
		s := env.side[nd.id]
		if seen[s] {
			continue
		}
		seen[s] = true
		var g []string
		for _, o := range env.nodes {
			if env.side[o.id] == s {
				g = append(g, strconv.FormatUint(uint64(o.id), 10))
			}
		}
		sides = append(sides, "("+strings.Join(g, ",")+")")
	}
	env.printf("partitioned %s\n", strings.Join(sides, " "))
	return nil
}

// handleCut cuts the links between every server of IDs and every server
// of with: messages across them are dropped on delivery, both ways.
func (env *Env) handleCut(a argList) error {
	ids, err := a.ids()
	if err != nil {
		return err
	}
	with, err := a.idVals("with")
	if err != nil {
		return err
	}
	if len(ids) == 0 || len(with) == 0 {
		return usagef("cut IDs with=IDs")
	}
	var names []string
	for _, x := range ids {
		for _, y := range with {
			if x == y {
				continue
			}
			env.cuts[linkOf(x, y)] = true
			names = append(names, fmt.Sprintf("%d-%d", x, y))
		}
	}
	env.printf("cut %s\n", strings.Join(names, " "))
	return nil
}

func (env *Env) handleStatus(a argList) error {
	ids, err := a.ids()
	if err != nil {
		return err
	}
	for _, nd := range env.nodes {
		if len(ids) == 0 || slices.Contains(ids, nd.id) {
			env.printf("%s\n", env.formatStatus(nd))
		}
	}
	return nil
}

func (env *Env) handleStorage(a argList) error {
	ids, err := a.ids()
	if err != nil || len(ids) != 1 {
		return usagef("storage ID")
	}
	nd := env.node(ids[0])
	if nd == nil {
		return usagef("no node %d", ids[0])
	}
	s := nd.store
	env.printf("HardState %s\n", env.formatStruct(reflect.ValueOf(s.hs)))
	if s.snap != nil {
		env.printf("Snapshot %s\n", env.formatSnapshot(s.snap))
	}
	for _, e := range s.ents {
		env.printf("%s\n", env.formatEntry(e))
	}
	return nil
}

func (env *Env) handleCompact(a argList) error {
	if len(a) != 2 {
		return usagef("compact ID ZXID")
	}
	nd, err := env.liveArg(a[:1])
	if err != nil {
		return err
	}
	z, err := parseZxid(a[1].Key)
	if err != nil {
		return err
	}
	// The application's state at z: the payloads of the normal entries
	// up to z, which the node's committed log still holds.
	data := appAt(nd, z)
	if err := nd.n.Compact(z, data); err != nil {
		return err
	}
	snap := gpaxos.Snapshot{Index: z, Voters: nd.n.ConfigAt(z), Data: data}
	s := &nd.store
	i := 0
	for i < len(s.ents) && s.ents[i].Zxid <= z {
		i++
	}
	s.snap, s.ents = &snap, slices.Clone(s.ents[i:])
	env.printf("> %d compacted: snapshot %s\n", nd.id, env.formatSnapshot(&snap))
	return nil
}

// appAt returns the application state of nd at z (<= applied): its
// snapshot's payloads and those of the normal entries up to z.
func appAt(nd *node, z gpaxos.Zxid) []byte {
	var payloads []string
	base := gpaxos.Zxid(0)
	if s := nd.store.snap; s != nil {
		base = s.Index
		if len(s.Data) > 0 {
			payloads = strings.Split(string(s.Data), " ")
		}
	}
	for _, e := range nd.n.Entries(base, z) {
		if e.Type == gpaxos.EntryNormal {
			payloads = append(payloads, string(e.Data))
		}
	}
	return []byte(strings.Join(payloads, " "))
}
