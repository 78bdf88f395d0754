package replica

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// TestSeededEnsembleContinuesFromTheSnapshot seeds three new directories
// with one snapshot taken at epoch 7 and starts an ensemble on them: every
// replica delivers the snapshot first, registers its incarnation, and the
// entries that follow commit everywhere with zxids after the snapshot's.
func TestSeededEnsembleContinuesFromTheSnapshot(t *testing.T) {
	voters := grid(1, 3)
	index := gpaxos.MakeZxid(7, 42)
	c := newClusterFrom(t, voters, gpaxos.StarTopology{}, func(id gpaxos.ID, dir string) {
		if err := Seed(dir, id, voters, index, []byte("tree")); err != nil {
			t.Fatal(err)
		}
	})
	c.waitAll([]string{"snap:tree"}, 0)
	c.waitRegistered()
	c.proposeRetry(c.leader(), "after")
	c.waitAll([]string{"snap:tree", "after"}, 0)
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, zs := range c.zxids {
		if z := zs["after"]; z <= index || z.Epoch() <= index.Epoch() {
			t.Errorf("replica %d committed the first entry at %v, not in an epoch after the snapshot's %v", id, z, index)
		}
	}
}

// TestSeedRefusesAUsedDirectory: a directory holding anything is another
// server's state, never overwritten.
func TestSeedRefusesAUsedDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hardstate"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Seed(dir, 1, grid(1, 3), gpaxos.MakeZxid(1, 1), []byte("tree")); err == nil {
		t.Fatal("Seed wrote into a directory that was not empty")
	}
}
