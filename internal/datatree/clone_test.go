package datatree

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// underRoot reports whether every op of e touches only root's subtree and
// not "/": a create or delete strictly below root, any other op on root or
// below. Those, and the session entries, are the entries CloneSubtrees'
// copy must follow.
func underRoot(e *txn.Entry, root string) bool {
	in := func(o *txn.Op) bool {
		if strings.HasPrefix(o.Path, root+"/") {
			return true
		}
		return o.Path == root && o.Kind != txn.KindCreate && o.Kind != txn.KindDelete
	}
	switch e.Op.Kind {
	case txn.KindCreateSession, txn.KindCloseSession:
		return true
	case txn.KindMulti:
		for i := range e.Op.Ops {
			if !in(&e.Op.Ops[i]) {
				return false
			}
		}
		return true
	}
	return in(&e.Op)
}

// dumpUnder renders the nodes under root, as dump does, and the sessions
// with their ephemeral nodes under root.
func dumpUnder(tr *Tree, root string) string {
	var b strings.Builder
	for _, line := range strings.Split(dump(tr), "\n") {
		if strings.HasPrefix(line, root+" ") || strings.HasPrefix(line, root+"/") {
			b.WriteString(line + "\n")
		}
	}
	for _, s := range tr.Sessions() {
		var eph []string
		for _, p := range tr.Ephemerals(s.ID, "") {
			if p == root || strings.HasPrefix(p, root+"/") {
				eph = append(eph, p)
			}
		}
		fmt.Fprintf(&b, "session %#x %d %x eph=%v\n", s.ID, s.Timeout, s.Passwd, eph)
	}
	return b.String()
}

// triggersUnder keeps the triggers of trig about root and below.
func triggersUnder(trig []Trigger, root string) []Trigger {
	var out []Trigger
	for _, tg := range trig {
		if tg.Path == root || strings.HasPrefix(tg.Path, root+"/") {
			tg.ACL = nil
			out = append(out, tg)
		}
	}
	return out
}

// refused reports whether the server refuses e before ordering it when
// root is a weak namespace's root: a delete of root, or a multi with ops
// under root and elsewhere.
func refused(e *txn.Entry, root string) bool {
	ops := []txn.Op{e.Op}
	if e.Op.Kind == txn.KindMulti {
		ops = e.Op.Ops
	}
	under, elsewhere := false, false
	for _, o := range ops {
		if (o.Kind == txn.KindDelete || o.Kind == txn.KindDeleteContainer) && o.Path == root {
			return true
		}
		if o.Path == root || strings.HasPrefix(o.Path, root+"/") {
			under = true
		} else {
			elsewhere = true
		}
	}
	return e.Op.Kind == txn.KindMulti && under && elsewhere
}

// TestCloneSubtreesFollowsTheOriginal takes a copy of "/a" at a random
// point of a random history where "/a" is a persistent node, as a declared
// namespace's root is, from then on refuses what the server refuses (see
// refused), and applies to the copy only the entries that touch "/a"'s
// subtree or the sessions: every result and trigger, and the subtree and
// the sessions after every entry, must be those of the whole tree. This
// is what a weak namespace's speculative state relies on.
func TestCloneSubtreesFollowsTheOriginal(t *testing.T) {
	seeds, steps := 60, 300
	if testing.Short() {
		seeds = 10
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		tr, m := New(), newModel()
		g := &gen{r: r, m: m, now: 1_000_000, auths: map[int64][]zkproto.Id{
			0x101: nil, 0x102: {alice}, 0x103: {bob}, 0x104: {{Scheme: "super", ID: "x"}}}}
		var cl *Tree
		cloneAt := r.IntN(steps / 2)
		for step := range steps {
			if n := tr.nodes["/a"]; cl == nil && step >= cloneAt && n != nil && n.owner == 0 {
				cl = tr.CloneSubtrees([]string{"/a", "/missing"})
				checkInvariants(t, cl)
				if dumpUnder(cl, "/a") != dumpUnder(tr, "/a") {
					t.Fatalf("seed %d: copy differs from the original:\n%s\n%s", seed, dumpUnder(cl, "/a"), dumpUnder(tr, "/a"))
				}
			}
			e := g.entry()
			e.Zxid = int64(step + 1)
			if cl != nil && refused(&e, "/a") {
				continue
			}
			want, wantTrig := tr.Apply(&e)
			m.apply(&e)
			if cl == nil || !underRoot(&e, "/a") {
				continue
			}
			got, gotTrig := cl.Apply(&e)
			checkInvariants(t, cl)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d step %d: %+v\n copy  %+v\n whole %+v", seed, step, e, got, want)
			}
			if fmt.Sprint(triggersUnder(gotTrig, "/a")) != fmt.Sprint(triggersUnder(wantTrig, "/a")) {
				t.Fatalf("seed %d step %d: triggers\n copy  %v\n whole %v", seed, step, gotTrig, wantTrig)
			}
			if a, b := dumpUnder(cl, "/a"), dumpUnder(tr, "/a"); a != b {
				t.Fatalf("seed %d step %d: %+v\n copy:\n%s whole:\n%s", seed, step, e, a, b)
			}
		}
	}
}
