package itest

import (
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// TestLauncherShapes: a cluster of one server is a standalone server that
// cluster status shows as the whole membership; a stopped cluster's
// directory refuses another shape (its servers' logs hold the old
// membership) unless forced, which starts afresh.
func TestLauncherShapes(t *testing.T) {
	one := StartEnsembleSpec(t, members.Shape{Nodes: 1, Classic: true}, nil)
	if st := one.Status(); len(st) != 1 || st[0].Mode != "standalone" || !st[0].Serving || st[0].Member != "yes" {
		t.Fatalf("one server: %+v", st)
	}
	if err := one.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	spec := one.Spec
	spec.Shape = members.Shape{Nodes: 3, Classic: true}
	if c, err := launcher.Start(spec, 30*time.Second); c != nil || err == nil || !strings.Contains(err.Error(), "--force") {
		if c != nil {
			c.Stop(5 * time.Second)
		}
		t.Fatalf("another shape in a stopped cluster's directory: %v, want a refusal naming --force", err)
	}
	spec.Force = true
	three, err := launcher.Start(spec, 30*time.Second)
	if three != nil {
		t.Cleanup(func() { three.Stop(5 * time.Second) })
	}
	if err != nil {
		t.Fatal(err)
	}
	waitStatusMembers(t, three, map[members.ID]string{1: "yes", 2: "yes", 3: "yes"})
}
