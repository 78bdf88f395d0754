package itest

import (
	"fmt"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// waitMetric polls a server's series until ok accepts its value.
func waitMetric(t *testing.T, s launcher.Server, series string, ok func(float64) bool) float64 {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		v := metric(t, s, series)
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %d: %s = %g 10s on", s.ID, series, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEnsembleMetrics scrapes the metrics ports of a classic-3 ensemble:
// each member exports its role, the leader it follows, its epoch, the
// election that made it, its links to the others, and the latency of the
// requests it answered by operation, and how far behind real time its
// applied state is. Cut off, the leader falls behind and is replaced: the
// others count a second election and follow the new
// leader in a later epoch, and the new leader times the election.
func TestEnsembleMetrics(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r, err := DialRaw(c.Servers[leader-1].ClientAddr, 10000, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := r.Call(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"}, &zkproto.ExistsResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	if n := metric(t, c.Servers[leader-1], `giraffe_request_seconds_count{op="exists"}`); n < 5 {
		t.Errorf("the leader's exists latency histogram counts %g requests, want 5", n)
	}
	// A leader change of its own (a loaded machine delays heartbeats)
	// may come at any time: read the view again until every member
	// reports the same leader and epoch in one pass.
	var epoch float64
	for deadline := time.Now().Add(10 * time.Second); ; {
		if leader, err = Leader(c, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		epoch = metric(t, c.Servers[leader-1], "giraffe_epoch")
		agree := epoch > 0
		for _, s := range c.Servers {
			role := "acceptor"
			if s.ID == leader {
				role = "leader"
			}
			agree = agree && metric(t, s, `giraffe_role{role="`+role+`"}`) == 1 &&
				metric(t, s, "giraffe_leader") == float64(leader) && metric(t, s, "giraffe_epoch") == epoch
		}
		if agree {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the members do not agree on their leader and epoch for 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range c.Servers {
		if v := metric(t, s, `giraffe_role{role="standalone"}`); v != 0 {
			t.Errorf("server %d: standalone %g", s.ID, v)
		}
		if n := metric(t, s, "giraffe_elections_total"); n < 1 {
			t.Errorf("server %d counts %g elections", s.ID, n)
		}
		for _, p := range c.Servers {
			if p.ID != s.ID {
				waitMetric(t, s, fmt.Sprintf(`giraffe_peer_connected{peer="%d"}`, p.ID), func(v float64) bool { return v == 1 })
			}
		}
		// A member in step applies its own touches within moments.
		waitMetric(t, s, "giraffe_lag_seconds", func(v float64) bool { return v >= 0 && v < 1 })
		// Every member logs every member's touches, idle or not.
		logged := metric(t, s, "giraffe_log_bytes_written_total")
		waitMetric(t, s, "giraffe_log_bytes_written_total", func(v float64) bool { return v > logged })
	}
	var others []launcher.Server
	for _, s := range c.Servers {
		if s.ID != leader {
			others = append(others, s)
		}
	}
	before := map[members.ID]float64{}
	for _, s := range others {
		before[s.ID] = metric(t, s, "giraffe_election_seconds_count")
	}
	if _, err := c.Fault(leader, "isolate"); err != nil {
		t.Fatal(err)
	}
	// Cut off, the old leader applies none of its touches any more: the
	// age of its state grows.
	waitMetric(t, c.Servers[leader-1], "giraffe_lag_seconds", func(v float64) bool { return v > 2 })
	var next float64
	for _, s := range others {
		waitMetric(t, s, "giraffe_epoch", func(v float64) bool { return v > epoch })
		next = waitMetric(t, s, "giraffe_leader", func(v float64) bool { return v != float64(leader) && v != 0 })
		if n := metric(t, s, "giraffe_elections_total"); n < 2 {
			t.Errorf("server %d counts %g elections after the leader's isolation", s.ID, n)
		}
	}
	// The new leader promised itself the new epoch before it led it, so it
	// timed the election (a member may learn the new epoch's promise and
	// history at once, and time none).
	id := members.ID(next)
	waitMetric(t, c.Servers[id-1], "giraffe_election_seconds_count", func(v float64) bool { return v > before[id] })
}
