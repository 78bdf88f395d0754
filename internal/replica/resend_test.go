package replica

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// fakeClock is a Clock the test moves.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

// hostNet is three hosts driven in lock step over a fake clock: every
// message sent during a step is delivered at the next one, so each hop
// of the protocol takes one step of the clock.
type hostNet struct {
	t       *testing.T
	clock   *fakeClock
	hosts   map[gpaxos.ID]*Host
	queued  []gpaxos.Message
	got     map[gpaxos.ID][]string
	dropped func(gpaxos.Message) bool
	// props counts the proposals each server sent the leader in MsgProp
	// messages, resends included.
	props map[gpaxos.ID]int
}

func newHostNet(t *testing.T) *hostNet {
	n := &hostNet{t: t, clock: &fakeClock{now: time.Unix(1e9, 0)}, hosts: map[gpaxos.ID]*Host{},
		got: map[gpaxos.ID][]string{}, props: map[gpaxos.ID]int{}}
	for id := gpaxos.ID(1); id <= 3; id++ {
		h, err := NewHost(HostConfig{
			Node: gpaxos.Config{ID: id, Voters: grid(1, 3), Topology: gpaxos.StarTopology{}, HeartbeatTicks: 1,
				ElectionTicks: 10, Rand: rand.New(rand.NewSource(int64(id))).Intn, Incarnation: uint64(id)},
			Boots: 1, Tick: 10 * time.Millisecond, ProposalTimeout: time.Second, Clock: n.clock,
			Send: func(m gpaxos.Message) { n.queued = append(n.queued, m) },
			Deliver: func(d Delivery) {
				for _, e := range d.Entries {
					if !e.Noop {
						n.got[id] = append(n.got[id], string(e.Body))
					}
				}
			},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}, gpaxos.HardState{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		n.hosts[id] = h
	}
	return n
}

// step advances the clock by d, delivers what the last step sent, ticks
// every host and drives each until it is quiet.
func (n *hostNet) step(d time.Duration) {
	n.clock.now = n.clock.now.Add(d)
	msgs := n.queued
	n.queued = nil
	for _, m := range msgs {
		if m.Type == gpaxos.MsgProp {
			n.props[m.From] += len(m.Entries)
		}
		if n.dropped != nil && n.dropped(m) {
			continue
		}
		n.hosts[m.To].Step(m)
	}
	for id := gpaxos.ID(1); id <= 3; id++ {
		h := n.hosts[id]
		h.Tick()
		h.TakeQueued()
		for {
			rd, ok := h.NextReady()
			if !ok {
				break
			}
			for _, m := range rd.Early {
				n.queued = append(n.queued, m)
			}
			if err := h.Persisted(rd); err != nil {
				n.t.Fatal(err)
			}
		}
	}
}

// settle steps until a leader has committed an entry of its epoch and
// returns a follower.
func (n *hostNet) settle() (leader, follower *Host) {
	for i := 0; i < 200; i++ {
		n.step(10 * time.Millisecond)
		for _, h := range n.hosts {
			if st := h.Status(); st.Leader && st.HardState.Commit.Epoch() == st.HardState.Promised {
				leader = h
			}
		}
		if leader != nil {
			break
		}
	}
	if leader == nil {
		n.t.Fatal("no leader")
	}
	for id, h := range n.hosts {
		if id != leader.id {
			return leader, h
		}
	}
	return nil, nil
}

// TestNoResendWhileTheStreamMoves: proposals that take longer than the
// resend interval to commit (a queue in front of the leader: here four
// hops of 40 ms against an interval of 100 ms) are not resent once the
// origin's earlier proposals are seen committing, since the leader appends
// a stream in order and nothing before them was lost. Resending them all
// each interval would multiply the queue that made them late. (The first
// proposals of the stream may be resent: nothing of the stream had
// committed within the interval.)
func TestNoResendWhileTheStreamMoves(t *testing.T) {
	n := newHostNet(t)
	_, f := n.settle()
	const count = 50
	var want []string
	var moving bool
	var resentBefore uint64
	for i := 0; i < count+20; i++ {
		if i < count {
			body := fmt.Sprintf("p%02d", i)
			want = append(want, body)
			f.Propose([]byte(body), nil)
		}
		n.step(40 * time.Millisecond)
		if !moving && len(n.got[f.id]) > 0 {
			moving, resentBefore = true, f.Resent()
		}
	}
	if got := n.got[f.id]; !slices.Equal(got, want) {
		t.Fatalf("the follower applied %q, want each proposal once, in order", got)
	}
	if f.Resent() != resentBefore || n.props[f.id] != count+int(resentBefore) {
		t.Fatalf("%d proposals sent for %d made (%d resent before the first commit, %d in all): the stream kept moving",
			n.props[f.id], count, resentBefore, f.Resent())
	}
}

// TestResendAfterTheStreamStops: a lost proposal stops the stream (the
// leader appends nothing after the gap), and after the resend interval
// without progress the origin resends what is in flight, and everything
// commits once, in order.
func TestResendAfterTheStreamStops(t *testing.T) {
	n := newHostNet(t)
	_, f := n.settle()
	lost := false
	n.dropped = func(m gpaxos.Message) bool {
		if m.Type == gpaxos.MsgProp && m.From == f.id && !lost {
			lost = true
			return true
		}
		return false
	}
	var want []string
	for i := 0; i < 60; i++ {
		if i < 10 {
			body := fmt.Sprintf("p%02d", i)
			want = append(want, body)
			f.Propose([]byte(body), nil)
		}
		n.step(40 * time.Millisecond)
	}
	if !lost {
		t.Fatal("no proposal was dropped")
	}
	if got := n.got[f.id]; !slices.Equal(got, want) {
		t.Fatalf("the follower applied %q, want each proposal once, in order", got)
	}
	if f.Resent() == 0 || n.props[f.id] <= len(want) {
		t.Fatalf("%d proposals sent for %d made (%d resent) after a lost proposal", n.props[f.id], len(want), f.Resent())
	}
}
