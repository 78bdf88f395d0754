package itest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
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
	// The server that left may miss what follows its removal.
	t.Logf("every replica: %s", waitEqualDigests(t, c, 20*time.Second, c.Servers[1].ID))
}

// waitEqualDigests waits until every server of c but those skipped serves
// and answers the same tree digest at the same zxid (four-letter word
// hash), and returns that answer.
func waitEqualDigests(t *testing.T, c *launcher.Cluster, timeout time.Duration, skip ...members.ID) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		hashes := map[string][]string{}
		for _, s := range c.Servers {
			if slices.Contains(skip, s.ID) {
				continue
			}
			out, err := FourLetter(s.ClientAddr, "hash")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out, "digest:") {
				out = "not serving" // a server that does not serve has no digest to compare
			}
			hashes[out] = append(hashes[out], fmt.Sprint(s.ID))
		}
		if len(hashes) == 1 {
			for h := range hashes {
				if h != "not serving" {
					return strings.TrimSpace(h)
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas differ: %v", hashes)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
