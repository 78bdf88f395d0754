package replica

import (
	"fmt"
	"io"
	"os"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/storage/snap"
)

// Seed makes dir, which must be missing or empty, the storage of server
// id as a member of a new ensemble whose history begins with a snapshot:
// data, the application's state after every entry up to index, under the
// configuration voters. Every member of the new ensemble is seeded with
// the same snapshot (restoring an ensemble from a backup); Open then finds
// what a member that compacted its log at index holds: the snapshot, an
// empty log after it, and a hard state that knows index committed and
// promised nothing newer than index's epoch, so the first leader's epoch
// and zxids follow index's. The identity is a fresh incarnation, which the
// ensemble registers as it registers a new ensemble's members.
func Seed(dir string, id gpaxos.ID, voters quorum.Config, index gpaxos.Zxid, data []byte) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty: a member's storage is seeded only into a new directory", dir)
	} else if err != nil && !os.IsNotExist(err) {
		return err
	}
	s := &storage{dir: dir, base: index}
	for _, d := range []string{dir, s.snapDir(), s.logDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if _, err := snap.Save(s.snapDir(), int64(index), func(w io.Writer) error {
		return writeSnapshot(w, voters, data)
	}); err != nil {
		return fmt.Errorf("saving snapshot: %w", err)
	}
	hs := gpaxos.HardState{Promised: index.Epoch(), Current: index.Epoch(), Commit: index}
	if err := s.writeHardState(hs); err != nil {
		return err
	}
	if err := writeIdentity(s.idPath(), identity{Server: uint64(id), Incarnation: newIncarnation()}); err != nil {
		return err
	}
	for _, d := range []string{s.logDir(), dir} {
		if err := fsutil.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}
