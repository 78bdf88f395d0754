package itest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/bench"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// TestBenchCarriesOn: giraffe bench's load generator, when a server it
// has sessions on is killed mid-run, counts the requests lost with the
// connection as errors, opens new sessions on the other servers and
// carries on, instead of failing the run.
func TestBenchCarriesOn(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var victim members.ID
	var servers []string
	for _, s := range c.Servers {
		servers = append(servers, s.ClientAddr)
		if s.ID != leader && victim == members.None {
			victim = s.ID
		}
	}
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

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
