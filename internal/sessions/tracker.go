package sessions

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/datatree"
)

// Tracker decides when sessions expire. It is the only place that reads a
// clock for sessions, and its callers pass the time in: expiry becomes a
// committed closeSession entry, so every replica removes the session and
// its ephemerals at the same point of the log, never by a local decision.
// It is safe for concurrent use.
type Tracker struct {
	mu       sync.Mutex
	deadline map[int64]time.Time
	timeout  map[int64]time.Duration
	closing  map[int64]bool // expiry or close already submitted
	nextID   int64
}

// NewTracker returns an empty tracker whose session ids are seeded as
// ZooKeeper seeds them (SessionTrackerImpl.initializeNextSessionId): the
// server id in the top byte and the time in milliseconds below it, so ids
// stay unique across restarts.
func NewTracker(serverID int64, now time.Time) *Tracker {
	next := (now.UnixMilli() << 24) >> 8 // keep 40 bits of time, clear the top byte
	next = int64(uint64(next) &^ (0xff << 56))
	next |= serverID << 56
	return &Tracker{
		deadline: make(map[int64]time.Time),
		timeout:  make(map[int64]time.Duration),
		closing:  make(map[int64]bool),
		nextID:   next,
	}
}

// NewSession returns a fresh session id and password.
func (t *Tracker) NewSession() (int64, []byte) {
	t.mu.Lock()
	t.nextID++
	id := t.nextID
	t.mu.Unlock()
	passwd := make([]byte, 16)
	rand.Read(passwd)
	return id, passwd
}

// Add starts tracking a session with the given timeout.
func (t *Tracker) Add(id int64, timeout time.Duration, now time.Time) {
	t.mu.Lock()
	t.timeout[id] = timeout
	t.deadline[id] = now.Add(timeout)
	t.mu.Unlock()
}

// Touch extends a live session; it reports false for a session that is
// unknown or already being closed. A session being closed is extended
// all the same: its close may not take effect (an expiry decided before
// a move of the session is refused when it commits), and then the next
// expiry must count from the latest evidence that it lives, not from the
// deadline the refused one was decided on.
func (t *Tracker) Touch(id int64, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.touchLocked(id, now)
}

// touchLocked is Touch with t.mu held.
func (t *Tracker) touchLocked(id int64, now time.Time) bool {
	to, ok := t.timeout[id]
	if !ok {
		return false
	}
	t.deadline[id] = now.Add(to)
	return !t.closing[id]
}

// MarkClosing records that a close was submitted; it reports false if one
// already was.
func (t *Tracker) MarkClosing(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing[id] {
		return false
	}
	t.closing[id] = true
	return true
}

// UnmarkClosing undoes MarkClosing when the close was abandoned.
func (t *Tracker) UnmarkClosing(id int64) {
	t.mu.Lock()
	delete(t.closing, id)
	t.mu.Unlock()
}

// Remove forgets a session once its close is applied.
func (t *Tracker) Remove(id int64) {
	t.mu.Lock()
	delete(t.deadline, id)
	delete(t.timeout, id)
	delete(t.closing, id)
	t.mu.Unlock()
}

// Expired returns the sessions past their deadline that are not already
// being closed, in id order, and marks them closing.
func (t *Tracker) Expired(now time.Time) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int64
	for id, d := range t.deadline {
		if now.After(d) && !t.closing[id] {
			t.closing[id] = true
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ResetFrom replaces the tracked sessions by those of an installed
// snapshot, each with a full timeout from now.
func (t *Tracker) ResetFrom(sessions []datatree.SessionInfo, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.deadline)
	clear(t.timeout)
	clear(t.closing)
	for _, si := range sessions {
		to := time.Duration(si.Timeout) * time.Millisecond
		t.timeout[si.ID], t.deadline[si.ID] = to, now.Add(to)
	}
}

// RestartClocks gives every session a full timeout from now. A server that
// has just become the leader calls it (through Expiry): it has not been
// the one watching the sessions, so it must not expire any before its
// clients have had a timeout to show they are alive (ZooKeeper does the
// same on election).
func (t *Tracker) RestartClocks(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, to := range t.timeout {
		t.deadline[id] = now.Add(to)
	}
	clear(t.closing)
}

// TimeoutOf returns the timeout session id expires by (0 if unknown).
func (t *Tracker) TimeoutOf(id int64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.timeout[id]
}

// Deadlines returns when each session expires unless touched again.
func (t *Tracker) Deadlines() map[int64]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.deadline)
}

// Count returns the number of tracked sessions.
func (t *Tracker) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.timeout)
}

// AppendTouch encodes after b (the caller's own prefix) the sessions a
// member's touch lists, in increasing order, each as the uvarint of its
// difference from the one before (the first from 0). A server numbers the
// sessions it creates from one prefix, so most differences fit a byte
// where a whole id takes eight: the touches of every connected session,
// written to the log every period, are what session liveness costs. A
// touch that lists none still proves the member's contact with a quorum
// (Guard). ids is sorted in place.
func AppendTouch(b []byte, ids []int64) []byte {
	slices.SortFunc(ids, func(x, y int64) int { return cmp.Compare(uint64(x), uint64(y)) })
	prev := uint64(0)
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(id)-prev)
		prev = uint64(id)
	}
	return b
}

// TouchListed touches, at now, every session that b, an AppendTouch
// encoding, lists. It stops at the first malformed difference.
func (t *Tracker) TouchListed(b []byte, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := uint64(0)
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return
		}
		b, id = b[n:], id+d
		t.touchLocked(int64(id), now)
	}
}

// TouchListedFixed touches the sessions of a touch written in the
// earlier encoding, 8 bytes per id, as logs written before AppendTouch
// packed them still hold.
func (t *Tracker) TouchListedFixed(b []byte, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for ; len(b) >= 8; b = b[8:] {
		t.touchLocked(int64(binary.BigEndian.Uint64(b)), now)
	}
}
