package itest

import (
	"fmt"
	"testing"
	"time"
)

// TestReplicasEqualAfterJoinsAndLeaves changes the membership of a
// classic-3 ensemble (a server joins, another leaves) and checks that
// every replica's tree digest is the same at the same zxid: everything a
// replica applies, /zookeeper/config's write included, is decided before
// it is ordered, never by the replica's own clock.
func TestReplicasEqualAfterJoinsAndLeaves(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	if _, err := Leader(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// One replica hears everything 30 ms late, so it applies each change
	// in another millisecond than the others.
	late := c.Servers[2].ID
	if _, err := c.Fault(late, "delay * 30ms in"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Join(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the two changes a few ms apart in time
	if err := c.Leave(c.Servers[1].ID, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fault(late, "heal"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		hashes := map[string][]string{}
		for _, s := range c.Servers {
			if s.ID == c.Servers[1].ID {
				continue // left: it may miss what follows its removal
			}
			out, err := FourLetter(s.ClientAddr, "hash")
			if err != nil {
				t.Fatal(err)
			}
			hashes[out] = append(hashes[out], fmt.Sprint(s.ID))
		}
		if len(hashes) == 1 {
			for h := range hashes {
				t.Logf("every replica: %s", h)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas differ: %v", hashes)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
