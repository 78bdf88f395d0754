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

// Journal notes the changes between successive reports of one server.
// Its first note is the state the server first reports (its leader, role
// and members), so an election at start-up is on the timeline too.
type Journal struct {
	mu      sync.Mutex
	events  []Event
	last    Self
	members []quorum.ID
}

// Observe compares the server's report s and its members with the
// previous ones and notes what changed.
func (j *Journal) Observe(now time.Time, s Self, members []quorum.ID) {
	j.mu.Lock()
	defer j.mu.Unlock()
	prev, prevMembers := j.last, j.members
	j.last, j.members = s, slices.Clone(members)
	add := func(kind, format string, args ...any) {
		j.events = append(j.events, Event{At: now.UnixMilli(), Server: s.ID, Kind: kind, Text: fmt.Sprintf(format, args...)})
		if len(j.events) > KeepEvents {
			j.events = slices.Delete(j.events, 0, len(j.events)-KeepEvents)
		}
	}
	switch {
	case s.Leader == prev.Leader && s.Epoch == prev.Epoch:
	case s.Leader != 0:
		add("leader", "leader %d, epoch %d", s.Leader, s.Epoch)
	case prev.Leader != 0:
		add("leader", "no leader known (epoch %d)", s.Epoch)
	}
	switch {
	case s.Role == prev.Role:
	case prev.Role == "":
		add("role", "server %d: %s", s.ID, s.Role)
	default:
		add("role", "server %d: %s, was %s", s.ID, s.Role, prev.Role)
	}
	if !slices.Equal(members, prevMembers) {
		add("membership", "members %v", members)
	}
}

// Events returns the events held, oldest first.
func (j *Journal) Events() []Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.events)
}
