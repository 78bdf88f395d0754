package itest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/launcher"
)

// TestDivergedNamespaceFoundAndResynced changes /2 on one follower of a
// classic-3 ensemble with the paper's namespaces outside the log (the
// "diverge" fault, as damage in memory would), then writes on: at the
// next digest checkpoint the members find the follower the odd one out
// and count the divergence. The other two agree and are a quorum without
// it, so the follower quarantines /2, marks its state for a resync and
// starts again by itself (the same `giraffe server` process): within 10 s
// it is registered anew and the three agree on every namespace, all
// healthy, and its client reads /2 through it again. The same holds when
// the odd one out is the leader (the writer then sees at most a lost
// connection, as at any change of leader).
func TestDivergedNamespaceFoundAndResynced(t *testing.T) {
	for _, leader := range []bool{false, true} {
		t.Run(map[bool]string{false: "follower", true: "leader"}[leader], func(t *testing.T) {
			testDivergedNamespaceResynced(t, leader)
		})
	}
}

func testDivergedNamespaceResynced(t *testing.T, leader bool) {
	c := StartEnsemble(t, Classic3, append(paperNamespaces, "giraffe.digestInterval=16")...)
	l, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var victim, other launcher.Server
	for _, s := range c.Servers {
		switch {
		case (s.ID == l) == leader && victim.ID == 0:
			victim = s
		case s.ID != l:
			other = s
		}
	}
	writer := zkConnect(t, []string{other.ClientAddr})
	onVictim := zkConnect(t, []string{victim.ClientAddr})
	for _, p := range []string{"/1/a", "/2/a"} {
		if _, err := writer.Create(p, []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := c.Fault(victim.ID, "diverge 2"); err != nil {
		t.Fatalf("diverge: %v %s", err, out)
	}
	logPath := filepath.Join(victim.Dir, "server.log")
	logged := func(s string) bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), s)
	}
	// Writes carry the log past the next checkpoints.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; !logged("stopping to receive this member's state anew"); i++ {
		if time.Now().After(deadline) {
			sts, _ := nsStatusAgree(t, c)
			t.Fatalf("server %d did not stop to resync: %+v", victim.ID, sts)
		}
		if _, err := writer.Set("/1/a", []byte(fmt.Sprint(i)), -1); err != nil && !(leader && err == zk.ErrConnectionClosed) {
			t.Fatal(err)
		}
	}
	found := time.Now()
	if !logged("differs from the majority's") {
		t.Fatalf("server %d stopped without logging the divergence", victim.ID)
	}
	for _, s := range c.Servers {
		if s.ID == victim.ID {
			continue // its counters start again with it
		}
		// The others count the divergence when they apply the reports
		// that showed it, which need not precede the victim's stop: a
		// leader that stops at once may leave them to learn the commit
		// from its successor.
		for {
			got := metric(t, s, `giraffe_namespace_divergences_total{ns="/2"}`)
			if got >= 1 {
				break
			}
			if time.Since(found) > 10*time.Second {
				t.Fatalf("server %d counts %v divergences of /2", s.ID, got)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for !logged("marked for a resync from the ensemble") {
		if time.Since(found) > 10*time.Second {
			t.Fatalf("server %d did not start again to resync", victim.ID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitRegistered(t, c, 10*time.Second-time.Since(found))
	for {
		_, err := writer.Set("/1/a", []byte("after"), -1)
		if err == nil {
			break
		}
		if !leader || err != zk.ErrConnectionClosed || time.Since(found) > 10*time.Second {
			t.Fatal(err)
		}
	}
	sts := waitNSAtOneZxid(t, c)
	checkNSEqual(t, sts, nil)
	for _, st := range sts {
		for _, ns := range st.Namespaces {
			if ns.State != adminapi.StateHealthy {
				t.Fatalf("server %d: %+v", st.ID, ns)
			}
		}
	}
	if took := time.Since(found); took > 10*time.Second {
		t.Fatalf("server %d healthy %v after the divergence was found", victim.ID, took)
	} else {
		t.Logf("server %d resynced and healthy %v after the divergence was found", victim.ID, took.Round(time.Millisecond))
	}
	// The client of the resynced member reads /2 through it again.
	if _, err := onVictim.Sync("/2/a"); err != nil {
		t.Fatal(err)
	}
	if d, _, err := onVictim.Get("/2/a"); err != nil || string(d) != "v" {
		t.Fatalf("/2/a through the resynced member: %q %v", d, err)
	}
	t.Logf("every replica: %s", waitEqualDigests(t, c, 20*time.Second))
}
