package datatree

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// This file checks Tree against a deliberately simple reference model of
// ZooKeeper's semantics, written from PrepRequestProcessor and DataTree
// independently of the implementation: nodes in one map keyed by full path,
// children found by scanning, the client-visible Stat kept field by field
// (cversion counted as changes to the children, not derived from a counter),
// and multi made atomic by copying the whole model. Random entries are
// applied to both; every result, every trigger and, after every entry, the
// whole visible state must agree.

type mnode struct {
	data  []byte
	acl   []zkproto.ACL
	stat  zkproto.Stat // as a client sees it
	owner int64        // as stored
	seq   int32        // children ever created: the sequential counter
}

type model struct {
	nodes    map[string]*mnode
	sessions map[int64]SessionInfo
}

func newModel() *model {
	m := &model{nodes: map[string]*mnode{}, sessions: map[int64]SessionInfo{}}
	m.nodes["/"] = &mnode{data: []byte{}, acl: zkproto.OpenACLUnsafe, stat: zkproto.Stat{Cversion: -1, NumChildren: 1}}
	m.nodes["/zookeeper"] = &mnode{data: []byte{}, acl: zkproto.OpenACLUnsafe, stat: zkproto.Stat{Cversion: -2, NumChildren: 2}}
	m.nodes["/zookeeper/quota"] = &mnode{data: []byte{}, acl: zkproto.OpenACLUnsafe}
	m.nodes["/zookeeper/config"] = &mnode{data: []byte{}, acl: zkproto.ReadACLUnsafe, stat: zkproto.Stat{Aversion: -1}}
	return m
}

func (m *model) clone() *model {
	c := &model{nodes: map[string]*mnode{}, sessions: maps.Clone(m.sessions)}
	for p, n := range m.nodes {
		cp := *n
		c.nodes[p] = &cp
	}
	return c
}

func mparent(p string) string {
	i := strings.LastIndex(p, "/")
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func isTTLOwner(o int64) bool     { return uint64(o)>>56 == 0xff }
func isSessionOwner(o int64) bool { return o != 0 && o != zkproto.ContainerOwner && !isTTLOwner(o) }

func (m *model) children(p string) []string {
	var out []string
	for q := range m.nodes {
		if q != "/" && mparent(q) == p {
			out = append(out, q[strings.LastIndex(q, "/")+1:])
		}
	}
	slices.Sort(out)
	return out
}

func (m *model) apply(e *txn.Entry) (txn.Result, []Trigger) {
	switch e.Op.Kind {
	case txn.KindCreateSession:
		if _, ok := m.sessions[e.Session]; ok || !isSessionOwner(e.Session) {
			return txn.Result{Err: zkproto.ErrBadArguments}, nil
		}
		m.sessions[e.Session] = SessionInfo{ID: e.Session, Timeout: e.Timeout, Passwd: slices.Clone(e.Passwd)}
		return txn.Result{}, nil
	case txn.KindCloseSession:
		if _, ok := m.sessions[e.Session]; !ok {
			return txn.Result{Err: zkproto.ErrSessionExpired}, nil
		}
		var trig []Trigger
		for _, p := range m.ephemerals(e.Session) {
			trig = m.remove(p, e.Zxid, trig)
		}
		delete(m.sessions, e.Session)
		return txn.Result{}, trig
	case txn.KindDeleteContainer:
		p := e.Op.Path
		if !strings.Contains(p, "/") || strings.Contains(p, "\x00") || isSpecialPath(p) {
			return txn.Result{Err: zkproto.ErrBadArguments}, nil
		}
		n := m.nodes[p]
		if n == nil {
			return txn.Result{Err: zkproto.ErrNoNode}, nil
		}
		if n.stat.NumChildren > 0 {
			return txn.Result{Err: zkproto.ErrNotEmpty}, nil
		}
		expired := isTTLOwner(n.owner) && e.Time-n.stat.Mtime > n.owner&zkproto.MaxTTLMillis
		if n.owner != zkproto.ContainerOwner && !expired {
			return txn.Result{Err: zkproto.ErrBadVersion}, nil
		}
		return txn.Result{}, m.remove(p, e.Zxid, nil)
	case txn.KindNoop:
		return txn.Result{}, nil
	case txn.KindMulti:
		work := m.clone()
		res := txn.Result{Multi: []txn.Result{}}
		var trig []Trigger
		for i, o := range e.Op.Ops {
			var r txn.Result
			var tr []Trigger
			if o.Kind == txn.KindSetACL || o.Kind == txn.KindMulti {
				r = txn.Result{Err: zkproto.ErrBadArguments}
			} else {
				r, tr = work.op(e, &o)
			}
			if r.Err != zkproto.OK {
				res.Err = r.Err
				res.Multi = make([]txn.Result, len(e.Op.Ops))
				res.Multi[i] = r
				for j := i + 1; j < len(e.Op.Ops); j++ {
					res.Multi[j].Err = zkproto.ErrRuntimeInconsistency
				}
				return res, nil
			}
			res.Multi = append(res.Multi, r)
			trig = append(trig, tr...)
		}
		*m = *work
		return res, trig
	}
	return m.op(e, &e.Op)
}

func (m *model) op(e *txn.Entry, o *txn.Op) (txn.Result, []Trigger) {
	bad := func(c zkproto.Code) (txn.Result, []Trigger) { return txn.Result{Err: c}, nil }
	z := e.Zxid
	switch o.Kind {
	case txn.KindCreate:
		if o.Flags < 0 || o.Flags > 6 {
			return bad(zkproto.ErrBadArguments)
		}
		ttlMode := o.Flags == 5 || o.Flags == 6
		if o.OpCode == zkproto.OpCreateTTL && (!ttlMode || o.TTL <= 0 || o.TTL > zkproto.MaxTTLMillis) ||
			o.OpCode != zkproto.OpCreateTTL && ttlMode {
			return bad(zkproto.ErrBadArguments)
		}
		if _, ok := m.sessions[e.Session]; !ok {
			return bad(zkproto.ErrSessionExpired)
		}
		if !strings.Contains(o.Path, "/") || strings.Contains(o.Path, "\x00") {
			return bad(zkproto.ErrBadArguments)
		}
		list, err := acl.Fixup(o.ACL, e.Auth)
		if err != nil {
			return bad(zkproto.ErrInvalidACL)
		}
		pp := mparent(o.Path)
		parent := m.nodes[pp]
		if parent == nil {
			return bad(zkproto.ErrNoNode)
		}
		if !acl.Check(parent.acl, zkproto.PermCreate, e.Auth) {
			return bad(zkproto.ErrNoAuth)
		}
		path := o.Path
		if o.Flags == 2 || o.Flags == 3 || o.Flags == 6 {
			path += fmt.Sprintf("%010d", parent.seq)
		}
		if !validPath(path) {
			return bad(zkproto.ErrBadArguments)
		}
		if m.nodes[path] != nil {
			return bad(zkproto.ErrNodeExists)
		}
		if isSessionOwner(parent.owner) {
			return bad(zkproto.ErrNoChildrenForEphemerals)
		}
		var owner int64
		switch {
		case o.OpCode == zkproto.OpCreateContainer:
			owner = zkproto.ContainerOwner
		case o.OpCode == zkproto.OpCreateTTL:
			owner = -0x0100000000000000 | o.TTL
		case o.Flags == 1 || o.Flags == 3:
			owner = e.Session
		}
		n := &mnode{data: o.Data, acl: list, owner: owner, stat: zkproto.Stat{
			Czxid: z, Mzxid: z, Pzxid: z, Ctime: e.Time, Mtime: e.Time, DataLength: int32(len(o.Data))}}
		if isSessionOwner(owner) {
			n.stat.EphemeralOwner = owner
		}
		m.nodes[path] = n
		parent.seq++
		parent.stat.Cversion++
		parent.stat.NumChildren++
		parent.stat.Pzxid = z
		return txn.Result{Path: path, Stat: n.stat}, []Trigger{
			{zkproto.EventNodeCreated, path, z, nil}, {zkproto.EventNodeChildrenChanged, pp, z, nil}}
	case txn.KindDelete:
		if _, ok := m.sessions[e.Session]; !ok {
			return bad(zkproto.ErrSessionExpired)
		}
		if !strings.Contains(o.Path, "/") || strings.Contains(o.Path, "\x00") || isSpecialPath(o.Path) {
			return bad(zkproto.ErrBadArguments)
		}
		parent := m.nodes[mparent(o.Path)]
		if parent == nil {
			return bad(zkproto.ErrNoNode)
		}
		if !acl.Check(parent.acl, zkproto.PermDelete, e.Auth) {
			return bad(zkproto.ErrNoAuth)
		}
		n := m.nodes[o.Path]
		if n == nil {
			return bad(zkproto.ErrNoNode)
		}
		if o.Version != -1 && o.Version != n.stat.Version {
			return bad(zkproto.ErrBadVersion)
		}
		if n.stat.NumChildren > 0 {
			return bad(zkproto.ErrNotEmpty)
		}
		return txn.Result{}, m.remove(o.Path, z, nil)
	}
	// setData, setACL and check validate the whole path first.
	if _, ok := m.sessions[e.Session]; !ok {
		return bad(zkproto.ErrSessionExpired)
	}
	if !validPath(o.Path) {
		return bad(zkproto.ErrBadArguments)
	}
	var list []zkproto.ACL
	if o.Kind == txn.KindSetACL {
		var err error
		if list, err = acl.Fixup(o.ACL, e.Auth); err != nil {
			return bad(zkproto.ErrInvalidACL)
		}
	}
	n := m.nodes[o.Path]
	if n == nil {
		return bad(zkproto.ErrNoNode)
	}
	perm := map[txn.Kind]int32{txn.KindSetData: zkproto.PermWrite, txn.KindSetACL: zkproto.PermAdmin, txn.KindCheck: zkproto.PermRead}[o.Kind]
	if !acl.Check(n.acl, perm, e.Auth) {
		return bad(zkproto.ErrNoAuth)
	}
	current := n.stat.Version
	if o.Kind == txn.KindSetACL {
		current = n.stat.Aversion
	}
	if o.Version != -1 && o.Version != current {
		return bad(zkproto.ErrBadVersion)
	}
	switch o.Kind {
	case txn.KindSetData:
		n.data = o.Data
		n.stat.DataLength = int32(len(o.Data))
		n.stat.Version++
		n.stat.Mzxid = z
		n.stat.Mtime = e.Time
		return txn.Result{Stat: n.stat}, []Trigger{{zkproto.EventNodeDataChanged, o.Path, z, nil}}
	case txn.KindSetACL:
		n.acl = list
		n.stat.Aversion++
		return txn.Result{Stat: n.stat}, nil
	}
	return txn.Result{}, nil
}

func (m *model) remove(p string, z int64, trig []Trigger) []Trigger {
	delete(m.nodes, p)
	pp := mparent(p)
	parent := m.nodes[pp]
	parent.stat.Cversion++
	parent.stat.NumChildren--
	parent.stat.Pzxid = max(parent.stat.Pzxid, z)
	return append(trig, Trigger{zkproto.EventNodeDeleted, p, z, nil}, Trigger{zkproto.EventNodeChildrenChanged, pp, z, nil})
}

func (m *model) ephemerals(session int64) []string {
	var out []string
	for p, n := range m.nodes {
		if n.owner == session {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func (m *model) reapCandidates(now int64) []string {
	var out []string
	for p, n := range m.nodes {
		if n.stat.NumChildren != 0 {
			continue
		}
		if n.owner == zkproto.ContainerOwner && n.seq > 0 ||
			isTTLOwner(n.owner) && now-n.stat.Mtime > n.owner&zkproto.MaxTTLMillis {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// compare checks that tr shows exactly the model's state.
func (m *model) compare(tr *Tree, now int64) error {
	super := []zkproto.Id{{Scheme: "super"}}
	if tr.NodeCount() != len(m.nodes) {
		return fmt.Errorf("node count %d, model %d", tr.NodeCount(), len(m.nodes))
	}
	var size int64
	eph := 0
	for p, n := range m.nodes {
		size += int64(len(p) + len(n.data))
		if isSessionOwner(n.owner) {
			eph++
		}
		data, st, code := tr.GetData(p, super)
		if code != zkproto.OK || string(data) != string(n.data) || (data == nil) != (n.data == nil) || st != n.stat {
			return fmt.Errorf("%s: tree %q %+v %v\nmodel %q %+v", p, data, st, code, n.data, n.stat)
		}
		a, _, _ := tr.GetACL(p, super)
		if !slices.Equal(a, n.acl) {
			return fmt.Errorf("%s: acl %v, model %v", p, a, n.acl)
		}
		kids, _, _ := tr.Children(p, super)
		if want := m.children(p); !slices.Equal(kids, want) && len(kids)+len(want) > 0 {
			return fmt.Errorf("%s: children %v, model %v", p, kids, want)
		}
	}
	if size != tr.ApproximateDataSize() || eph != tr.EphemeralCount() {
		return fmt.Errorf("size %d eph %d, model %d %d", tr.ApproximateDataSize(), tr.EphemeralCount(), size, eph)
	}
	ids := slices.Sorted(maps.Keys(m.sessions))
	got := tr.Sessions()
	if len(got) != len(ids) {
		return fmt.Errorf("%d sessions, model %d", len(got), len(ids))
	}
	for i, id := range ids {
		if s := m.sessions[id]; got[i].ID != id || got[i].Timeout != s.Timeout || string(got[i].Passwd) != string(s.Passwd) {
			return fmt.Errorf("session %d: %+v, model %+v", i, got[i], s)
		}
		if e := tr.Ephemerals(id, ""); !slices.Equal(e, m.ephemerals(id)) && len(e)+len(m.ephemerals(id)) > 0 {
			return fmt.Errorf("ephemerals of %#x: %v, model %v", id, e, m.ephemerals(id))
		}
	}
	if c, w := tr.ReapCandidates(now), m.reapCandidates(now); !slices.Equal(c, w) {
		return fmt.Errorf("reap candidates at %d: %v, model %v", now, c, w)
	}
	return nil
}

// gen draws random entries that hit every op and most error paths.
type gen struct {
	r     *rand.Rand
	m     *model
	now   int64
	auths map[int64][]zkproto.Id
}

var (
	genNames = []string{"a", "b", "c"}
	genACLs  = [][]zkproto.ACL{
		zkproto.OpenACLUnsafe, zkproto.OpenACLUnsafe, zkproto.OpenACLUnsafe,
		zkproto.CreatorAllACL, aliceAll, zkproto.ReadACLUnsafe, {},
		worldOnly(zkproto.PermAll &^ zkproto.PermCreate), worldOnly(zkproto.PermAll &^ zkproto.PermDelete),
		{{Perms: zkproto.PermRead | zkproto.PermAdmin, ID: alice}, {Perms: zkproto.PermAll, ID: bob}},
	}
	genSessions = []int64{0x101, 0x102, 0x103, 0x104}
)

func (g *gen) path() string {
	switch g.r.IntN(20) {
	case 0:
		return []string{"/a/", "a", "/a//b", "/zookeeper", "/zookeeper/quota", "/", "/a/./b", "/a\x00"}[g.r.IntN(8)]
	case 1, 2, 3, 4, 5, 6, 7, 8:
		// An existing node, to reach deeper and sequential paths.
		paths := slices.Sorted(maps.Keys(g.m.nodes))
		return paths[g.r.IntN(len(paths))]
	}
	var b strings.Builder
	for d := 1 + g.r.IntN(3); d > 0; d-- {
		b.WriteString("/" + genNames[g.r.IntN(len(genNames))])
	}
	return b.String()
}

func (g *gen) version() int32 { return int32(g.r.IntN(4)) - 1 }

func (g *gen) data() []byte {
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	return []byte(fmt.Sprint(g.r.IntN(1000)))
}

func (g *gen) single() txn.Op {
	switch g.r.IntN(10) {
	case 0, 1, 2, 3:
		o := txn.Op{Kind: txn.KindCreate, Path: g.path(), Data: g.data(), ACL: genACLs[g.r.IntN(len(genACLs))],
			Flags: int32(g.r.IntN(5)), OpCode: zkproto.OpCreate2}
		if g.r.IntN(20) == 0 {
			o.Flags = int32(g.r.IntN(10)) - 1
		}
		switch g.r.IntN(6) {
		case 0:
			o.OpCode = zkproto.OpCreateContainer
		case 1:
			o.OpCode, o.TTL = zkproto.OpCreateTTL, []int64{-1, 0, 50, 300, 300, 300, zkproto.MaxTTLMillis + 1}[g.r.IntN(7)]
			if g.r.IntN(4) > 0 {
				o.Flags = 5 + int32(g.r.IntN(2))
			}
		case 2:
			o.OpCode = zkproto.OpCreate
		}
		return o
	case 4, 5:
		return txn.Op{Kind: txn.KindDelete, Path: g.path(), Version: g.version()}
	case 6, 7:
		return txn.Op{Kind: txn.KindSetData, Path: g.path(), Data: g.data(), Version: g.version()}
	case 8:
		return txn.Op{Kind: txn.KindCheck, Path: g.path(), Version: g.version()}
	}
	return txn.Op{Kind: txn.KindSetACL, Path: g.path(), ACL: genACLs[g.r.IntN(len(genACLs))], Version: g.version()}
}

func (g *gen) entry() txn.Entry {
	g.now += int64(g.r.IntN(200))
	// Mostly a live session, so that most entries get past the session
	// check; sometimes any id, live or not.
	s := genSessions[g.r.IntN(len(genSessions))]
	if live := slices.Sorted(maps.Keys(g.m.sessions)); len(live) > 0 && g.r.IntN(10) > 0 {
		s = live[g.r.IntN(len(live))]
	}
	e := txn.Entry{Time: g.now, Session: s, Auth: g.auths[s]}
	switch k := g.r.IntN(40); {
	case k < 2:
		e.Session = genSessions[g.r.IntN(len(genSessions))]
		e.Op = txn.Op{Kind: txn.KindCreateSession}
		e.Timeout, e.Passwd = int32(g.r.IntN(40000)), []byte(fmt.Sprint(g.r.Int()))
	case k < 3:
		e.Op = txn.Op{Kind: txn.KindCloseSession}
	case k < 5:
		e.Op = txn.Op{Kind: txn.KindDeleteContainer, Path: g.path()}
		if c := g.m.reapCandidates(g.now); len(c) > 0 && g.r.IntN(2) == 0 {
			e.Op.Path = c[g.r.IntN(len(c))]
		}
	case k < 10:
		ops := make([]txn.Op, g.r.IntN(5))
		for i := range ops {
			ops[i] = g.single()
			if g.r.IntN(30) == 0 {
				ops[i] = multiOp()
			}
		}
		e.Op = multiOp(ops...)
	default:
		e.Op = g.single()
	}
	return e
}

func TestModel(t *testing.T) {
	seeds, steps := 300, 300
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		tr, m := New(), newModel()
		g := &gen{r: r, m: m, now: 1_000_000, auths: map[int64][]zkproto.Id{
			0x101: nil, 0x102: {alice}, 0x103: {bob, {Scheme: "ip", ID: "127.0.0.1"}}, 0x104: {{Scheme: "super", ID: "x"}}}}
		var log []string
		for step := range steps {
			e := g.entry()
			e.Zxid = int64(step + 1)
			log = append(log, fmt.Sprintf("%+v", e))
			fail := func(format string, args ...any) {
				t.Helper()
				tail := log[max(0, len(log)-8):]
				t.Fatalf("seed %d step %d: %s\nlast entries:\n%s", seed, step, fmt.Sprintf(format, args...), strings.Join(tail, "\n"))
			}
			got, gotTrig := tr.Apply(&e)
			gotTrig = stripACLs(t, gotTrig)
			want, wantTrig := m.apply(&e)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				fail("result\n tree  %+v\n model %+v", got, want)
			}
			if !equalTriggers(gotTrig, wantTrig) && len(gotTrig)+len(wantTrig) > 0 {
				fail("triggers\n tree  %v\n model %v", gotTrig, wantTrig)
			}
			checkInvariants(t, tr)
			if err := m.compare(tr, g.now+int64(r.IntN(400))); err != nil {
				fail("%v", err)
			}
		}
	}
}
