package snap

import (
	"errors"
	"fmt"
	"os"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
)

// MinRetain is the fewest snapshots Purge keeps, ZooKeeper's autopurge
// minimum: with fewer, one damaged snapshot could leave nothing to recover
// from.
const MinRetain = 3

// Purge keeps the newest retain snapshots in snapDir and the transaction
// log segments in logDir needed to replay from the oldest of them, and
// deletes the older ones, snapshots first (oldest first), then log
// segments. While fewer than retain snapshots exist it deletes nothing.
// Snapshots are counted by name, not verified; LoadNewest falls back past
// damaged ones. The log part goes through wal.PurgeDir, so it is safe while
// the server's log is open. retain below MinRetain is an error.
//
// Old snapshots are renamed aside (fsutil.TrashSuffix) and then deleted
// gradually (fsutil.RemoveGradually), so that dropping a snapshot of a
// gigabyte does not stall the fsyncs of a log on the same disk; a purge of
// such a snapshot takes a second or two.
func Purge(snapDir, logDir string, retain int, opts ...Option) error {
	cfg := configure(opts)
	if retain < MinRetain {
		return fmt.Errorf("snap: retain count %d is below the minimum of %d", retain, MinRetain)
	}
	snaps, err := list(snapDir)
	if err != nil {
		return err
	}
	if len(snaps) < retain {
		// Only what an interrupted purge renamed aside goes.
		_, err := fsutil.RemoveTrash(snapDir)
		return err
	}
	oldestKept := snaps[len(snaps)-retain]
	var errs []error
	removed := 0
	for _, s := range snaps[:len(snaps)-retain] {
		if err := os.Rename(s.path, s.path+fsutil.TrashSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed++
		cfg.logger.Info("snap: purged snapshot", "file", s.path)
	}
	if removed > 0 {
		if err := fsutil.SyncDir(snapDir); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := fsutil.RemoveTrash(snapDir); err != nil {
		errs = append(errs, err)
	}
	if _, err := wal.PurgeDir(logDir, oldestKept.zxid, cfg.logger); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
