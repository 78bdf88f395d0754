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

// AppendExpiry encodes after b where an expiry was decided: the zxid of
// the last entry its leader had applied (its epoch is the high half), ahead
// of the expiry's entry.
func AppendExpiry(b []byte, decidedAt uint64) []byte {
	return binary.BigEndian.AppendUint64(b, decidedAt)
}

// ParseExpiry splits what follows AppendExpiry's prefix into the zxid the
// expiry was decided at and the entry's bytes; ok is false when it is too
// short.
func ParseExpiry(b []byte) (decidedAt uint64, entry []byte, ok bool) {
	if len(b) < 8 {
		return 0, nil, false
	}
	return binary.BigEndian.Uint64(b), b[8:], true
}
