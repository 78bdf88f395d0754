package replica

import (
	"io"
	"log/slog"
	"math/rand"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// TestLeaderAppendsOnlyProposalsSentToItsEpoch checks that a leader drops
// a forwarded proposal sent under an older epoch. Its origin resends what
// it has not seen committed once an entry of a newer epoch commits; had
// the late copy been appended too (it reached the next leader, or the
// same server leading again, after the change), the proposal would have
// committed twice.
func TestLeaderAppendsOnlyProposalsSentToItsEpoch(t *testing.T) {
	var got []Committed
	h, err := NewHost(HostConfig{
		Node: gpaxos.Config{ID: 1, Voters: grid(1, 1), Topology: gpaxos.StarTopology{}, HeartbeatTicks: 1,
			ElectionTicks: 3, Rand: rand.New(rand.NewSource(1)).Intn, Incarnation: 11},
		Boots: 1, Tick: time.Millisecond, ProposalTimeout: time.Second, Clock: wallClock{},
		Send:    func(m gpaxos.Message) { t.Fatalf("a single server sent %v", m.Type) },
		Deliver: func(d Delivery) { got = append(got, d.Entries...) },
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, gpaxos.HardState{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	drive := func() {
		for {
			rd, ok := h.NextReady()
			if !ok {
				return
			}
			if err := h.Persisted(rd); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 100 && !h.Status().Leader; i++ {
		h.Tick()
		drive()
	}
	st := h.Status()
	if !st.Leader || st.HardState.Commit.Epoch() != st.HardState.Promised {
		t.Fatalf("no leader with a committed entry of its epoch: %+v", st)
	}
	epoch := st.HardState.Promised
	forward := func(e gpaxos.Epoch, body string) gpaxos.Message {
		hd := proposalHeader{Origin: 2, Inc: 22, Stream: 1 << 32, Seq: 1}
		return gpaxos.Message{Type: gpaxos.MsgProp, From: 2, Inc: 22, To: 1, Epoch: e,
			Entries: []gpaxos.Entry{{Type: gpaxos.EntryNormal, Data: append(hd.append(nil), body...)}}}
	}
	got = nil
	h.Step(forward(epoch-1, "late"))
	drive()
	h.Step(forward(epoch, "now"))
	drive()
	var bodies []string
	for _, c := range got {
		if !c.Noop {
			bodies = append(bodies, string(c.Body))
		}
	}
	if len(bodies) != 1 || bodies[0] != "now" {
		t.Fatalf("committed %q, want only the proposal sent to the leader's epoch", bodies)
	}
}
