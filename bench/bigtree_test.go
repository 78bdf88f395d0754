package bench

import (
	"context"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/embed"
)

// TestBigTreeAgainstAServer runs a small big-tree benchmark against a real
// standalone server that snapshots every 1,000 entries: the tree is
// created (and found in place the second time), both workers are timed
// without errors, and the window holds the snapshots the background
// writes cause.
func TestBigTreeAgainstAServer(t *testing.T) {
	dir := t.TempDir()
	cfg := embed.Standalone(dir)
	cfg.SnapCount = 1000
	srv, err := embed.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	bt := BigTreeConfig{Servers: []string{srv.Addr().String()}, Znodes: 2500, ValueSize: 100, Fanout: 1000,
		Duration: 1500 * time.Millisecond, Rate: 2000, SnapDirs: []string{dir}}
	res, err := RunBigTree(context.Background(), bt)
	if err != nil {
		t.Fatal(err)
	}
	if res.PopulateSeconds <= 0 || res.PopulateOpsPerSec <= 0 {
		t.Fatalf("the tree was not created: %+v", res)
	}
	for name, c := range map[string]Class{"read": res.Read, "write": res.Write} {
		if c.Ops == 0 || c.Errors != 0 || c.Latency.Max <= 0 {
			t.Fatalf("%s: %+v", name, c)
		}
	}
	if res.BackgroundOps == 0 || res.Snapshots == 0 {
		t.Fatalf("%d background writes and %d snapshots in the window", res.BackgroundOps, res.Snapshots)
	}
	bt.Rate, bt.Duration = 0, 200*time.Millisecond
	again, err := RunBigTree(context.Background(), bt)
	if err != nil {
		t.Fatal(err)
	}
	if again.PopulateSeconds != 0 || again.Read.Ops == 0 || again.Write.Errors != 0 {
		t.Fatalf("second run over the same tree: %+v", again)
	}
}
