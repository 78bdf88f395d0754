package membership

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// Config sets the forest shape and the timing of a membership node, in
// ticks: a tick is whatever period the caller drives Tick with.
type Config struct {
	Forest forest.Config
	// HeartbeatTicks is the period of the heartbeats a member sends its
	// neighbors (parents and children in every tree).
	HeartbeatTicks int
	// LeaseTicks is how long a neighbor may stay silent before its lease
	// expires and it is reported; it must exceed HeartbeatTicks by the
	// largest message delay the caller expects.
	LeaseTicks int
	// RetryTicks spaces every repeated request: join attempts, suspicion
	// reports, view requests.
	RetryTicks int
	// ElectionTicks is how long a Rooter takeover round collects the
	// candidates' announcements.
	ElectionTicks int
	// Window is the dissemination receiver's per-origin window
	// (forest.NewReceiver).
	Window int
}

// DefaultConfig returns timing suited to a tick of about 100 ms: heartbeats
// every 2 ticks, leases of 10.
func DefaultConfig(f forest.Config) Config {
	return Config{Forest: f, HeartbeatTicks: 2, LeaseTicks: 10, RetryTicks: 4, ElectionTicks: 6, Window: forest.DefaultWindow}
}

// Validate reports whether c is usable.
func (c Config) Validate() error {
	if err := c.Forest.Validate(); err != nil {
		return err
	}
	if c.HeartbeatTicks < 1 || c.RetryTicks < 1 || c.ElectionTicks < 1 || c.Window < 1 {
		return fmt.Errorf("membership: heartbeat, retry, election ticks and window must be positive: %+v", c)
	}
	if c.LeaseTicks <= c.HeartbeatTicks {
		return fmt.Errorf("membership: lease (%d ticks) must exceed the heartbeat period (%d)", c.LeaseTicks, c.HeartbeatTicks)
	}
	return nil
}
