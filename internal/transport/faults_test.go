package transport

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

func TestFaultDrop(t *testing.T) {
	const n = 2000
	trs := newCluster(t, 2, func(c *Config) { c.QueueLen = n })
	a, b := trs[0], trs[1]

	a.Faults().SetDrop(2, Out, 0.5)
	for i := range uint64(n) {
		a.Send(msg(1, 2, i))
	}
	dropped := a.Stats().Dropped.Fault
	if dropped < n*4/10 || dropped > n*6/10 {
		t.Fatalf("dropped %d of %d at probability 0.5", dropped, n)
	}
	got := recvN(t, b, n-int(dropped), 5*time.Second)
	for i := 1; i < len(got); i++ {
		if got[i].Commit <= got[i-1].Commit {
			t.Fatalf("drops reordered the link: %d after %d", got[i].Commit, got[i-1].Commit)
		}
	}

	// Inbound drops: received but never delivered; the other way still works.
	a.Faults().Heal()
	b.Faults().SetDrop(1, In, 1)
	a.Send(msg(1, 2, 0))
	waitFor(t, 5*time.Second, "the message to reach 2", func() bool { return b.Stats().Received == uint64(n-int(dropped))+1 })
	expectNothing(t, b, 50*time.Millisecond)
	b.Send(msg(2, 1, 0))
	recvN(t, a, 1, 5*time.Second)
}

func TestFaultDelayKeepsOrder(t *testing.T) {
	const n = 100
	const fixed, jitter = 60 * time.Millisecond, 40 * time.Millisecond
	for _, dir := range []Direction{Out, In} {
		t.Run(dir.String(), func(t *testing.T) {
			trs := newCluster(t, 2, nil)
			a, b := trs[0], trs[1]
			waitConnected(t, a, 2)
			if dir == Out {
				a.Faults().SetDelay(2, Out, fixed, jitter)
			} else {
				b.Faults().SetDelay(1, In, fixed, jitter)
			}
			sent := make([]time.Time, n)
			for i := range n {
				sent[i] = time.Now()
				a.Send(msg(1, 2, uint64(i)))
				if i%10 == 0 {
					time.Sleep(2 * time.Millisecond) // spread the sends over the jitter
				}
			}
			var got []gpaxos.Message
			for i := range n {
				if i == len(got) {
					got = append(got, recvN(t, b, 1, 5*time.Second)...)
				}
				m := got[i]
				if m.Commit != gpaxos.Zxid(i) {
					t.Fatalf("message %d arrived as #%d", m.Commit, i)
				}
				if d := time.Since(sent[i]); d < fixed {
					t.Fatalf("message %d arrived after %v, before the %v delay", i, d, fixed)
				}
			}
			// The other way is not delayed: its due time is its arrival.
			if dir == Out {
				if due, _ := a.Faults().route(In, 2, time.Now()); time.Until(due) > 0 {
					t.Fatalf("the reverse link is delayed until %v", due)
				}
			}
			b.Send(msg(2, 1, 0))
			recvN(t, a, 1, 5*time.Second)
		})
	}
}

func TestFaultBlockIsDirected(t *testing.T) {
	trs := newCluster(t, 2, nil)
	a, b := trs[0], trs[1]
	a.Faults().Block(2, Out)
	a.Send(msg(1, 2, 1))
	b.Send(msg(2, 1, 2))
	recvN(t, a, 1, 5*time.Second)
	expectNothing(t, b, 100*time.Millisecond)
	if s := a.Stats(); s.Dropped.Blocked != 1 {
		t.Fatalf("Blocked = %d", s.Dropped.Blocked)
	}
	a.Faults().Unblock(2, Out)
	a.Send(msg(1, 2, 3))
	if m := recvN(t, b, 1, 5*time.Second)[0]; m.Commit != 3 {
		t.Fatalf("after unblock got %+v", m)
	}
	b.Faults().Block(1, In)
	a.Send(msg(1, 2, 4))
	expectNothing(t, b, 100*time.Millisecond)
}

func TestFaultIsolateAndHeal(t *testing.T) {
	trs := newCluster(t, 3, nil)
	a := trs[0]
	a.Faults().Isolate()
	a.Send(msg(1, 2, 1))
	a.Send(msg(1, 3, 1))
	trs[1].Send(msg(2, 1, 1))
	trs[2].Send(msg(3, 1, 1))
	trs[1].Send(msg(2, 3, 9)) // the others still talk
	if m := recvN(t, trs[2], 1, 5*time.Second)[0]; m.From != 2 {
		t.Fatalf("3 got %+v", m)
	}
	expectNothing(t, a, 100*time.Millisecond)
	expectNothing(t, trs[1], 10*time.Millisecond)
	waitFor(t, 5*time.Second, "inbound blocks", func() bool { return a.Stats().Dropped.Blocked == 4 })

	a.Faults().Heal()
	a.Send(msg(1, 2, 2))
	trs[2].Send(msg(3, 1, 2))
	recvN(t, trs[1], 1, 5*time.Second)
	recvN(t, a, 1, 5*time.Second)
}

func TestFaultPause(t *testing.T) {
	trs := newCluster(t, 2, nil)
	a, b := trs[0], trs[1]
	waitConnected(t, a, 2)
	waitConnected(t, b, 1)
	a.Faults().Pause()
	if !a.Faults().Paused() {
		t.Fatal("Paused() = false")
	}
	for i := range uint64(10) {
		a.Send(msg(1, 2, i))
		b.Send(msg(2, 1, i))
	}
	expectNothing(t, a, 100*time.Millisecond)
	expectNothing(t, b, 10*time.Millisecond)
	if s := a.Stats(); s.Peers[2].Queued != 10 {
		t.Fatalf("paused writer's queue: %+v", s.Peers[2])
	}
	a.Faults().Resume()
	for _, tr := range trs {
		for i, m := range recvN(t, tr, 10, 5*time.Second) {
			if m.Commit != gpaxos.Zxid(i) {
				t.Fatalf("server %d: #%d is %d", tr.ID(), i, m.Commit)
			}
		}
	}
}

func TestFaultRulePrecedence(t *testing.T) {
	f := newFaults(1)
	now := time.Unix(1000, 0)
	blocked := func(dir Direction, p gpaxos.ID) bool {
		_, r := f.route(dir, p, now)
		return r == dropBlocked
	}
	f.Block(AllPeers, Out)
	f.Unblock(3, Out)
	if !blocked(Out, 2) || blocked(Out, 3) || blocked(In, 2) {
		t.Fatal("a single-peer unblock does not override a block of all peers")
	}
	f.Block(AllPeers, Both) // clears the exception for 3
	if !blocked(Out, 3) || !blocked(In, 3) {
		t.Fatal("a rule for all peers left an older single-peer rule in place")
	}
	f.Unblock(AllPeers, Both)
	f.Isolate()
	if !blocked(In, 7) {
		t.Fatal("isolation does not cover every peer")
	}
	f.Unblock(AllPeers, Both)
	if blocked(In, 7) || blocked(Out, 2) {
		t.Fatal("unblock * both left links cut")
	}
	f.SetDrop(AllPeers, Out, 1)
	f.SetDrop(4, Out, 0)
	if _, r := f.route(Out, 4, now); r != dropNone {
		t.Fatal("drop 4 0 does not spare peer 4")
	}
	if _, r := f.route(Out, 5, now); r != dropFault {
		t.Fatal("drop * 1 spared peer 5")
	}
}

// TestFaultDelayMonotonePerLink is a property: whatever the jitter, due
// times of one link never decrease, so delays cannot reorder a link.
func TestFaultDelayMonotonePerLink(t *testing.T) {
	f := newFaults(9)
	f.SetDelay(2, Out, time.Millisecond, 50*time.Millisecond)
	r := rand.New(rand.NewPCG(1, 1))
	now := time.Unix(0, 0)
	var last time.Time
	for i := range 10000 {
		now = now.Add(time.Duration(r.IntN(int(time.Millisecond))))
		if i == 5000 {
			f.SetDelay(2, Out, 0, 0) // removing the delay must not let later messages overtake
		}
		due, _ := f.route(Out, 2, now)
		if due.Before(last) || due.Before(now) {
			t.Fatalf("#%d: due %v after %v (now %v)", i, due, last, now)
		}
		last = due
	}
	if len(f.lastDue) > 1 {
		t.Fatalf("lastDue holds %d links", len(f.lastDue))
	}
}

func TestFaultSpecOfFaults(t *testing.T) {
	spec, err := ParseFaultSpec("block * in; unblock 3 in; drop 2 0.25; delay 4 10ms 5ms both; isolate; pause")
	if err != nil {
		t.Fatal(err)
	}
	f := newFaults(1)
	f.Apply(spec)
	got := f.Spec()
	g := newFaults(1)
	g.Apply(got)
	if !reflect.DeepEqual(g.Spec(), got) {
		t.Fatalf("Spec does not reproduce the rules:\n%v\n%v", got, g.Spec())
	}
	for _, frag := range []string{"block * in", "unblock 3 in", "drop 2 0.25", "delay 4 10ms 5ms in", "isolate", "pause"} {
		if !strings.Contains(got.String(), frag) {
			t.Fatalf("Spec %q lacks %q", got, frag)
		}
	}
	if f.Apply(FaultSpec{{Kind: FaultHeal}}); len(f.Spec()) != 0 || f.Paused() {
		t.Fatalf("heal left %v", f.Spec())
	}
}

// TestNoFaultInjection: a transport configured without fault injection has
// no Faults to change, and its messages flow both ways as on a transport
// with no rules.
func TestNoFaultInjection(t *testing.T) {
	trs := newCluster(t, 2, func(c *Config) { c.FaultInjection = false })
	a, b := trs[0], trs[1]
	if f := a.Faults(); f != nil {
		t.Fatalf("Faults() = %v without fault injection", f)
	}
	for i := range uint64(10) {
		a.Send(msg(1, 2, i))
		b.Send(msg(2, 1, i))
	}
	recvN(t, b, 10, 5*time.Second)
	recvN(t, a, 10, 5*time.Second)
}

// TestSlowSnapshotIsPassed: a snapshot received from a peer with a
// slowsnap rule is held for its delay, and the messages sent after it
// arrive first; the rule shows in Spec and goes with Heal.
func TestSlowSnapshotIsPassed(t *testing.T) {
	trs := newCluster(t, 2, nil)
	a, b := trs[0], trs[1]
	const hold = 300 * time.Millisecond
	b.Faults().SetSnapshotHold(1, hold)
	if got := b.Faults().Spec().String(); got != "slowsnap 1 300ms" {
		t.Fatalf("Spec = %q", got)
	}
	snap := msg(1, 2, 1)
	snap.Snapshot = &gpaxos.Snapshot{Index: 1, Data: []byte("tree")}
	start := time.Now()
	a.Send(snap)
	a.Send(msg(1, 2, 2))
	got := recvN(t, b, 2, 5*time.Second)
	if got[0].Commit != 2 || got[1].Snapshot == nil {
		t.Fatalf("arrival order %v then %v, want the plain message first", got[0].Commit, got[1].Commit)
	}
	if d := time.Since(start); d < hold {
		t.Fatalf("the snapshot arrived after %v, before its %v hold", d, hold)
	}
	b.Faults().Heal()
	start = time.Now()
	a.Send(snap)
	recvN(t, b, 1, 5*time.Second)
	if d := time.Since(start); d >= hold {
		t.Fatalf("the snapshot was held %v after the heal", d)
	}
}
