package itest

import (
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/hc/master"
	"github.com/giraffe-coord/giraffe/internal/zkpeer"
)

// TestHCOverZooKeeper runs the service with one Apache ZooKeeper 3.9
// server as the master and as one of the two workers (the other a Giraffe
// server): the service uses nothing Giraffe-only, and the master may be a
// worker too. Past the threshold a domain moves to the ZooKeeper worker; a
// lock held there moves back only once released, with a larger
// generation.
func TestHCOverZooKeeper(t *testing.T) {
	start := time.Now()
	zk := zkpeer.Start(t, zkpeer.Options{})
	t.Logf("ZooKeeper started in %v", time.Since(start).Round(time.Millisecond))
	s := &hcService{master: zk, workers: map[string]string{"w1": startHCWorker(t).Addr, "w2": zk}}
	s.admin = hcConnect(t, s.master)
	ctx := hcCtx(t, 60*time.Second)
	if err := master.Init(ctx, s.admin); err != nil {
		t.Fatal(err)
	}
	if err := master.Register(ctx, s.admin, "w1", s.workers["w1"], layout.Active); err != nil {
		t.Fatal(err)
	}
	if err := master.Register(ctx, s.admin, "w2", s.workers["w2"], layout.Standby); err != nil {
		t.Fatal(err)
	}
	c := s.client(t, 4*time.Second, 0)
	hcLocks(t, c, "/g", 0, 2)
	s.daemon(t, "d1", 3, nil)
	z := hcLocks(t, c, "/z", 0, 2)
	hcWait(t, 10*time.Second, "w2 recruited", func() bool { return clusterLocks(s.status(t))["w2"] == 2 })
	s.settle(t, 10*time.Second)
	h, err := c.TryAcquire(ctx, z[0])
	if err != nil {
		t.Fatal(err)
	}
	seq := h.Sequencer()
	if seq.Cluster != "w2" || !strings.HasPrefix(seq.Lock, "/z/") {
		t.Fatalf("held as %v, want on w2 (ZooKeeper)", seq)
	}
	if _, err := master.MoveLocks(ctx, s.admin, z[:1], "w1"); err != nil {
		t.Fatal(err)
	}
	hcWait(t, 5*time.Second, "recalcitrant", func() bool { return s.status(t).Recalcitrant == 1 })
	if ok, err := c.Validate(ctx, seq); err != nil || !ok {
		t.Fatalf("sequencer of a hold in force: %v %v", ok, err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	s.settle(t, 10*time.Second)
	h, err = c.TryAcquire(ctx, z[0])
	if err != nil {
		t.Fatal(err)
	}
	if after := h.Sequencer(); after.Cluster != "w1" || after.Generation <= seq.Generation {
		t.Fatalf("after the move held as %v, before as %v", after, seq)
	}
	if ok, _ := c.Validate(ctx, seq); ok {
		t.Fatal("the released hold's sequencer still validates")
	}
	h.Release(ctx)
}
