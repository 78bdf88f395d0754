package server

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/nsmap"
)

// TestNamespacesRepairingAfterLostState restarts a follower whose replica
// lost its hard state: it sets its state aside and starts empty, and
// every namespace reports repairing (and its gauge 1) until the ensemble
// has registered it anew and it has applied what was committed by then;
// once healthy again it answers, without a sync, the write committed
// before it lost its state.
func TestNamespacesRepairingAfterLostState(t *testing.T) {
	srvs := startInProcessEnsemble(t, 3, true, func(c *Config) {
		if err := c.Namespaces.Declare("1", nsmap.Strong); err != nil {
			t.Fatal(err)
		}
	})
	var victim *Server
	deadline := time.Now().Add(20 * time.Second)
	for victim == nil && time.Now().Before(deadline) {
		for _, s := range srvs {
			if s.isLeader() {
				victim = srvs[0]
				if s == srvs[0] {
					victim = srvs[1]
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if victim == nil {
		t.Fatal("no leader")
	}
	c := connectTo(t, victim)
	for _, p := range []string{"/1", "/1/a"} {
		for {
			_, err := c.Create(p, []byte("v"), 0, zk.WorldACL(zk.PermAll))
			if err == nil || err == zk.ErrNodeExists {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("create %s: %v", p, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	c.Close()
	for _, ns := range victim.namespacesStatus().Namespaces {
		if ns.State != adminapi.StateHealthy {
			t.Fatalf("before the loss: %s is %s", ns.Root, ns.State)
		}
	}

	cfg := victim.cfg
	victim.Close()
	if err := os.Remove(filepath.Join(cfg.ReplicaDir(), "hardstate")); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// Not started yet: it cannot have been registered.
	for _, ns := range s.namespacesStatus().Namespaces {
		if ns.State != adminapi.StateRepairing {
			t.Fatalf("after the loss: %s is %s, want %s", ns.Root, ns.State, adminapi.StateRepairing)
		}
	}
	if g := repairingGauges(t, s); len(g) != 2 || g["/1"] != 1 || g["/"] != 1 {
		t.Fatalf("repairing gauges %v, want 1 for / and /1", g)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	for healthy := false; !healthy; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("still repairing: %+v %+v", s.namespacesStatus(), s.pipe.(*replicated).rep.Status())
		}
		healthy = true
		for _, ns := range s.namespacesStatus().Namespaces {
			healthy = healthy && ns.State == adminapi.StateHealthy
		}
	}
	if g := repairingGauges(t, s); g["/1"] != 0 || g["/"] != 0 {
		t.Fatalf("repairing gauges %v once healthy, want 0", g)
	}
	c = connectTo(t, s)
	defer c.Close()
	if d, _, err := c.Get("/1/a"); err != nil || string(d) != "v" {
		t.Fatalf("healthy but /1/a is %q, %v", d, err)
	}
}

// connectTo opens a session with s alone.
func connectTo(t *testing.T, s *Server) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect([]string{s.Addr().String()}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			c.Close()
			t.Fatal("no session")
		}
	}
	return c
}

// repairingGauges collects giraffe_namespace_repairing from s, by root.
func repairingGauges(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	col := newNamespaceCollector(s)
	ch := make(chan prometheus.Metric, 64)
	col.Collect(ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		if m.Desc() != col.repairing {
			continue
		}
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		out[d.GetLabel()[0].GetValue()] = d.GetGauge().GetValue()
	}
	return out
}
