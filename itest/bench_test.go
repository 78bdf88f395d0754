package itest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/bench"
	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// TestBenchCarriesOn: giraffe bench's load generator, when a server it
// has sessions on is killed mid-run, counts the requests lost with the
// connection as errors, takes its sessions to the other servers and
// carries on, instead of failing the run.
func TestBenchCarriesOn(t *testing.T) {
	c, follower, others := startClassicWithFollower(t)
	victim := follower.ID
	servers := append(others, follower.ClientAddr)
	// The kill comes with the first progress line of the measured window:
	// the sessions are open and the load runs.
	var once sync.Once
	kill := writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), "measuring") {
			once.Do(func() { c.Kill(victim) })
		}
		return len(p), nil
	})
	res, err := bench.Run(context.Background(), bench.Config{Servers: servers, Workload: bench.Mixed, Sessions: 6,
		Outstanding: 8, ValueSize: 64, Warmup: 500 * time.Millisecond, Duration: 3 * time.Second, Progress: kill})
	if err != nil {
		t.Fatalf("the run failed: %v", err)
	}
	t.Logf("%d ops, %d errors, %d reconnects", res.Ops, res.Errors, res.Reconnects)
	if res.Reconnects < 2 || res.Ops == 0 {
		t.Fatalf("after killing server %d (2 of 6 sessions on it): %d ops, %d reconnects", victim, res.Ops, res.Reconnects)
	}
}

// TestBigTreePopulateCarriesOn: the big-tree benchmark creates its tree
// through one pipelined session per server; when one of those servers is
// killed part way, the chunk that session was creating goes again through
// another server, and the tree ends whole.
func TestBigTreePopulateCarriesOn(t *testing.T) {
	// The victim is a follower, in the middle of the list: the timed
	// workers after the populate use the first server and the last.
	c, follower, others := startClassicWithFollower(t)
	victim := follower.ID
	servers := []string{others[0], follower.ClientAddr, others[1]}
	var once sync.Once
	cfg := bench.BigTreeConfig{Servers: servers, Znodes: 60_000, ValueSize: 64, Fanout: 1000,
		Duration: 200 * time.Millisecond, Root: "/bigtree",
		Progress: func(string) { once.Do(func() { c.Kill(victim) }) }}
	res, err := bench.RunBigTree(context.Background(), cfg)
	if err != nil {
		t.Fatalf("the run failed after server %d was killed: %v", victim, err)
	}
	if res.PopulateSeconds <= 0 {
		t.Fatalf("the tree was not created: %+v", res)
	}
	// Every znode is there.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := client.Connect(ctx, servers[:1], client.WithSessionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for d := range cfg.Znodes / cfg.Fanout {
		kids, _, err := cl.Children(ctx, fmt.Sprintf("/bigtree/d%d", d))
		if err != nil || len(kids) != cfg.Fanout {
			t.Fatalf("/bigtree/d%d holds %d znodes, want %d (%v)", d, len(kids), cfg.Fanout, err)
		}
	}
}

// TestBigTreeWorkersCarryOn: the big-tree benchmark's timed reader
// works through one server; when that server is killed and restarted in
// the window, the reader's requests go again on a new session once it
// serves, the broken ones counted as errors, and the run completes with
// reads after the restart.
func TestBigTreeWorkersCarryOn(t *testing.T) {
	c, follower, others := startClassicWithFollower(t)
	servers := []string{follower.ClientAddr, others[0], others[1]}
	restarted := make(chan error, 1)
	cfg := bench.BigTreeConfig{Servers: servers, Znodes: 2_000, ValueSize: 64, Fanout: 100,
		Duration: 4 * time.Second, Root: "/bigtree",
		Began: func() {
			go func() {
				time.Sleep(300 * time.Millisecond)
				if err := c.Kill(follower.ID); err != nil {
					restarted <- err
					return
				}
				time.Sleep(300 * time.Millisecond)
				restarted <- c.Restart(follower.ID)
			}()
		}}
	res, err := bench.RunBigTree(context.Background(), cfg)
	if err != nil {
		t.Fatalf("the run failed after its reader's server restarted: %v", err)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if res.Read.Errors < 1 || res.Read.Ops == 0 || res.Write.Ops == 0 {
		t.Fatalf("reads %d (errors %d), writes %d: want reads on both sides of the restart and the broken one counted", res.Read.Ops, res.Read.Errors, res.Write.Ops)
	}
	if res.Read.Latency.Max < 300 {
		t.Fatalf("the slowest read took %.1f ms, less than the server was down: the outage is not in the latencies", res.Read.Latency.Max)
	}
}

// TestBenchOpenLoopAndServerCPU runs giraffe bench's open loop and its
// go-zookeeper client against a standalone server: the open loop answers
// about the offered rate (Poisson arrivals), both clients report the
// server's CPU per operation from its PID and the fsync probe, and neither
// sees an error.
func TestBenchOpenLoopAndServerCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	p := StartStandalone(t)
	base := bench.Config{Servers: []string{p.Addr}, Sessions: 2, ValueSize: 64, Warmup: 300 * time.Millisecond,
		Duration: 2 * time.Second, PIDs: []int{p.Cmd.Process.Pid}, FsyncDir: p.DataDir}
	for _, tc := range []struct {
		name     string
		workload string
		client   string
		rate     float64
	}{
		{"open loop, giraffe client", bench.Write, bench.ClientGiraffe, 400},
		{"open loop, go-zookeeper", bench.Read, bench.ClientGoZookeeper, 400},
		{"closed loop, go-zookeeper", bench.Write, bench.ClientGoZookeeper, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.Workload, cfg.Client, cfg.Rate, cfg.Outstanding = tc.workload, tc.client, tc.rate, 4
			res, err := bench.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %.0f ops/s, p99 %.2f ms, server CPU %.1f µs/op, fsync p50 %.2f ms",
				res.Mode, res.ThroughputOps, res.Latency.P99, res.ServerCPU.PerOpUs, res.Fsync.P50Ms)
			if res.Errors != 0 || res.Ops == 0 || res.Client != tc.client {
				t.Fatalf("%+v", res)
			}
			if tc.rate > 0 {
				// 800 arrivals expected in 2 s; a Poisson count's standard
				// deviation is 28.
				if res.Mode != "open" || res.OfferedOps != tc.rate || res.ThroughputOps < 0.7*tc.rate || res.ThroughputOps > 1.3*tc.rate {
					t.Fatalf("open loop at %.0f/s: mode %s, %.0f ops/s", tc.rate, res.Mode, res.ThroughputOps)
				}
			}
			if c := res.ServerCPU; c == nil || c.Seconds <= 0 || c.PerOpUs <= 0 || len(c.PIDs) != 1 {
				t.Fatalf("server CPU: %+v", res.ServerCPU)
			}
			if f := res.Fsync; f.Skipped != "" || f.Syncs != 32 || f.P50Ms <= 0 {
				t.Fatalf("fsync probe: %+v", f)
			}
		})
	}
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// startClassicWithFollower starts a classic-3 ensemble and returns it, one
// of its followers, and the client addresses of the other two servers.
func startClassicWithFollower(t *testing.T) (*launcher.Cluster, launcher.Server, []string) {
	t.Helper()
	c := StartEnsemble(t, Classic3)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var follower launcher.Server
	var others []string
	for _, s := range c.Servers {
		if s.ID != leader && follower.ID == members.None {
			follower = s
			continue
		}
		others = append(others, s.ClientAddr)
	}
	return c, follower, others
}
