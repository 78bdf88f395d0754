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
// next digest checkpoint the members find the follower the odd one out.
// The follower quarantines /2 (a request under /2 through it closes the
// connection; /1 is served), every member counts the divergence, and the
// follower's restart resyncs it from the ensemble: the three agree on
// every namespace again, all healthy.
func TestDivergedNamespaceFoundAndResynced(t *testing.T) {
	c := StartEnsemble(t, Classic3, append(paperNamespaces, "giraffe.digestInterval=16")...)
	l, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var victim, other launcher.Server
	for _, s := range c.Servers {
		switch {
		case s.ID == l:
		case victim.ID == 0:
			victim = s
		default:
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
	// Writes carry the log past the next checkpoints.
	quarantined := func() bool {
		sts, _ := nsStatusAgree(t, c)
		for _, st := range sts {
			if st.ID != victim.ID {
				continue
			}
			for _, ns := range st.Namespaces {
				if ns.Root == "/2" {
					return ns.State == adminapi.StateQuarantined
				}
			}
		}
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; !quarantined(); i++ {
		if time.Now().After(deadline) {
			sts, _ := nsStatusAgree(t, c)
			t.Fatalf("server %d not quarantined: %+v", victim.ID, sts)
		}
		if _, err := writer.Set("/1/a", []byte(fmt.Sprint(i)), -1); err != nil {
			t.Fatal(err)
		}
	}
	sts, agree := nsStatusAgree(t, c)
	if agree {
		t.Fatal("giraffe ns status finds the members in agreement")
	}
	for _, st := range sts {
		for _, ns := range st.Namespaces {
			bad := st.ID == victim.ID && ns.Root == "/2"
			if bad != (ns.State == adminapi.StateQuarantined) {
				t.Fatalf("server %d: %+v", st.ID, ns)
			}
			if bad && !strings.Contains(ns.Reason, "differs from the majority") {
				t.Fatalf("server %d: reason %q", st.ID, ns.Reason)
			}
		}
	}
	for _, s := range c.Servers {
		if got := metric(t, s, `giraffe_namespace_divergences_total{ns="/2"}`); got < 1 {
			t.Fatalf("server %d counts %v divergences of /2", s.ID, got)
		}
	}
	// Through the victim /1 is served; a request under /2 closes the
	// connection.
	if _, _, err := onVictim.Get("/1/a"); err != nil {
		t.Fatalf("/1 through the quarantining member: %v", err)
	}
	if _, _, err := onVictim.Get("/2/a"); err == nil {
		t.Fatal("/2 served by the member that quarantined it")
	}

	if err := c.Restart(victim.ID); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(victim.Dir, "server.log")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(logPath)
		if strings.Contains(string(b), "marked for a resync from the ensemble") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %d did not resync at its restart", victim.ID)
		}
	}
	waitRegistered(t, c, 20*time.Second)
	if _, err := writer.Set("/1/a", []byte("after"), -1); err != nil {
		t.Fatal(err)
	}
	checkNSEqual(t, waitNSAtOneZxid(t, c), nil)
	t.Logf("every replica: %s", waitEqualDigests(t, c, 20*time.Second))
}
