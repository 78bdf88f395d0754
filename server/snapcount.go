package server

import "math/rand/v2"

// snapCounter tells the applier when to snapshot: after between half of
// snapCount and snapCount applied entries, drawn anew after each
// snapshot, as ZooKeeper's SyncRequestProcessor does. The members of an
// ensemble apply the same entries; with one fixed count they would all
// serialize the tree, fsync the snapshot and purge their logs at the same
// moment, and on disks they share (or one busy disk each) their log
// fsyncs would stall together long enough for the others to suspect the
// leader. It belongs to the applier's goroutine.
type snapCounter struct {
	every int // snapCount
	since int // entries applied since the last snapshot
	due   int // entries after which the next snapshot is due
}

func newSnapCounter(every int) snapCounter {
	c := snapCounter{every: every}
	c.draw()
	return c
}

// draw picks the next count, in [every - every/2, every].
func (c *snapCounter) draw() {
	half := c.every / 2
	c.due = c.every - half + rand.IntN(half+1)
}

// applied counts one applied entry.
func (c *snapCounter) applied() { c.since++ }

// isDue reports whether a snapshot is due.
func (c *snapCounter) isDue() bool { return c.since >= c.due }

// taken restarts the count after a snapshot was begun.
func (c *snapCounter) taken() {
	c.since = 0
	c.draw()
}
