package console

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// Event is a change a server saw in itself: another global leader or
// epoch, another role, another membership. The console's timeline merges
// the members' events.
type Event struct {
	// At is when the server noticed, in Unix milliseconds.
	At     int64     `json:"t"`
	Server quorum.ID `json:"server"`
	// Kind is "leader", "role" or "membership"; Text says what changed.
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// KeepEvents is how many events a Journal holds.
const KeepEvents = 200

// Journal notes the changes a server reports in itself. The server
// reports its leader, epoch and role as they change (so a leader that
// lasts a moment is on the timeline too) and its membership as it
// samples it. The first note is the state the server first reports, so
// an election at start-up is on the timeline as well.
type Journal struct {
	mu      sync.Mutex
	events  []Event
	started bool
	last    Self
	members []quorum.ID
}

// Start notes s as the server's first state, unless a state is noted
// already: a change Observe noted is newer than any state read before it.
func (j *Journal) Start(now time.Time, s Self) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.started {
		j.observe(now, s)
	}
}

// Observe notes what differs in s (the leader and epoch, the role) from
// the state noted last.
func (j *Journal) Observe(now time.Time, s Self) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.observe(now, s)
}

func (j *Journal) observe(now time.Time, s Self) {
	prev := j.last
	j.last, j.started = s, true
	switch {
	case s.Leader == prev.Leader && s.Epoch == prev.Epoch:
	case s.Leader != 0:
		j.add(now, s.ID, "leader", "leader %d, epoch %d", s.Leader, s.Epoch)
	case prev.Leader != 0:
		j.add(now, s.ID, "leader", "no leader known (epoch %d)", s.Epoch)
	}
	switch {
	case s.Role == prev.Role:
	case prev.Role == "":
		j.add(now, s.ID, "role", "server %d: %s", s.ID, s.Role)
	default:
		j.add(now, s.ID, "role", "server %d: %s, was %s", s.ID, s.Role, prev.Role)
	}
}

// ObserveMembers notes server id's membership if it differs from the one
// noted last.
func (j *Journal) ObserveMembers(now time.Time, id quorum.ID, members []quorum.ID) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !slices.Equal(members, j.members) {
		j.members = slices.Clone(members)
		j.add(now, id, "membership", "members %v", members)
	}
}

func (j *Journal) add(now time.Time, id quorum.ID, kind, format string, args ...any) {
	j.events = append(j.events, Event{At: now.UnixMilli(), Server: id, Kind: kind, Text: fmt.Sprintf(format, args...)})
	if len(j.events) > KeepEvents {
		j.events = slices.Delete(j.events, 0, len(j.events)-KeepEvents)
	}
}

// Events returns the events held, oldest first.
func (j *Journal) Events() []Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.events)
}
