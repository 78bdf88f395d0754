package sessions

import (
	"encoding/binary"
	"time"
)

// Expiry decides, period after period, whether the leader may close the
// sessions its tracker finds expired. Its clocks restart, as ZooKeeper's
// do after an election, when it begins to lead an epoch: until then it
// was not the one watching the sessions. And it expires nothing while it
// has not applied every entry it knew committed a period earlier: a touch
// waiting to be applied here would otherwise go unseen (docs/ensemble.md,
// "Serving only with a quorum"). The zero value is ready; it is not safe
// for concurrent use.
type Expiry struct {
	expiring   bool   // led on the previous period
	epoch      uint64 // in this epoch
	commitSeen uint64 // the commit point at the previous period
}

// Status is what Expiry needs of the replica each period: whether it
// leads, the epoch, and the commit point and the last applied entry (as
// comparable zxids).
type Status struct {
	Leader          bool
	Epoch           uint64
	Commit, Applied uint64
}

// Due reports whether the sessions t finds expired at now may be closed;
// it restarts t's clocks when this server begins to lead an epoch.
func (x *Expiry) Due(t *Tracker, now time.Time, st Status) bool {
	if !st.Leader {
		x.expiring = false
		return false
	}
	seen := x.commitSeen
	x.commitSeen = st.Commit
	if !x.expiring || st.Epoch != x.epoch {
		t.RestartClocks(now)
		x.expiring, x.epoch = true, st.Epoch
		return false
	}
	return st.Applied >= seen
}

// ExpiryCounts reports whether an expiry decided by the leader of epoch
// decidedIn takes effect when it commits in epoch committedIn: only in
// the same epoch. The leader that decides is the one the touches of that
// epoch reach; a deposed leader, which no longer hears them, can still
// decide an expiry from its stale clocks, and its proposal, handed on to
// the next leader like any other, would otherwise end a session whose
// client is still connected and touched through the new leader.
func ExpiryCounts(decidedIn, committedIn uint64) bool { return decidedIn == committedIn }

// AppendExpiry encodes after b the epoch an expiry was decided in, ahead
// of its entry.
func AppendExpiry(b []byte, decidedIn uint64) []byte {
	return binary.BigEndian.AppendUint64(b, decidedIn)
}

// ParseExpiry splits what follows AppendExpiry's prefix into the epoch and
// the entry's bytes; ok is false when it is too short.
func ParseExpiry(b []byte) (decidedIn uint64, entry []byte, ok bool) {
	if len(b) < 8 {
		return 0, nil, false
	}
	return binary.BigEndian.Uint64(b), b[8:], true
}
