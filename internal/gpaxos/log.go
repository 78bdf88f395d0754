package gpaxos

import "sort"

// memLog is a node's log in memory: a snapshot base and the entries after
// floor, in strictly increasing zxid order. The floor is the snapshot's
// index, or below it while entries the snapshot covers are kept for a
// server that is receiving an older snapshot (Node.pins): once it has
// that one, it catches up by entries instead of needing the next.
type memLog struct {
	snap  Snapshot
	floor Zxid
	ents  []Entry
}

// last returns the zxid of the last entry, or the snapshot index.
func (l *memLog) last() Zxid {
	if len(l.ents) == 0 {
		return l.snap.Index
	}
	return max(l.ents[len(l.ents)-1].Zxid, l.snap.Index)
}

// search returns the position of the first entry with zxid > z.
func (l *memLog) search(z Zxid) int {
	return sort.Search(len(l.ents), func(i int) bool { return l.ents[i].Zxid > z })
}

// contains reports whether z is the snapshot index, the floor or an
// entry's zxid.
func (l *memLog) contains(z Zxid) bool {
	if z == l.snap.Index || z == l.floor {
		return true
	}
	i := l.search(z)
	return i > 0 && l.ents[i-1].Zxid == z
}

// after returns the entries with zxid > z, at most max of them (max <= 0:
// all); ok is false when entries after z have been compacted away.
func (l *memLog) after(z Zxid, max int) (ents []Entry, ok bool) {
	if z < l.floor {
		return nil, false
	}
	ents = l.ents[l.search(z):]
	if max > 0 && len(ents) > max {
		ents = ents[:max]
	}
	return ents, true
}

// between returns the entries in (lo, hi].
func (l *memLog) between(lo, hi Zxid) []Entry {
	return l.ents[l.search(lo):l.search(hi)]
}

// truncateAfter drops every entry with zxid > z.
func (l *memLog) truncateAfter(z Zxid) {
	l.ents = l.ents[:l.search(z)]
}

// compact installs snap as the base and drops the entries up to
// snap.Index, but keeps those after keep (when it holds them).
func (l *memLog) compact(snap Snapshot, keep Zxid) {
	floor := min(max(keep, l.floor), snap.Index)
	if floor > l.floor {
		l.ents = append([]Entry(nil), l.ents[l.search(floor):]...)
	}
	l.snap, l.floor = snap, floor
}

// install replaces the whole log by snap.
func (l *memLog) install(snap Snapshot) {
	l.snap, l.floor = snap, snap.Index
	l.ents = nil
}

// afterSnapshot returns the entries after the snapshot's index.
func (l *memLog) afterSnapshot() []Entry {
	return l.ents[l.search(l.snap.Index):]
}
