package gpaxos

import (
	"errors"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// Config configures a Node. Every server of an ensemble must use the same
// Voters, Topology and tick counts.
type Config struct {
	// ID is this server; it must vote in Voters.
	ID ID
	// Voters is the initial voting configuration (which server votes in which
	// group). A snapshot's or the log's configuration supersedes it.
	Voters quorum.Config
	// Topology decides how a group's messages travel from its coordinator;
	// it affects speed and liveness only, never safety.
	Topology Topology
	// HeartbeatTicks is the interval at which an idle GL and GCs send
	// heartbeats.
	HeartbeatTicks int
	// ElectionTicks is how long a server waits without hearing from its
	// coordinator (or a GC from its leader) before suspecting it; it must be
	// several HeartbeatTicks.
	ElectionTicks int
	// MaxBatch bounds the entries of one Append.
	MaxBatch int
	// MaxInflight bounds the entries the global leader has appended beyond
	// its commit point (flow control): proposals beyond it wait in the
	// leader's queue until commits make room. Without a bound a burst of
	// proposals becomes one huge Ready whose sends keep the leader silent
	// for longer than an election timeout. Zero means 4*MaxBatch.
	MaxInflight int
	// OrderDuringPersist: a leader orders the proposals that arrive while
	// its last Ready is being persisted at once, in overlapped Readies
	// (Ready.Ordered), and sends them on, instead of in the Ready after
	// Advance. For a host that answers a proposal once it is ordered
	// (replica's early replies), whose answers would otherwise wait for
	// the fsync under way. Otherwise what arrives during an fsync leaves
	// after it in as few appends as MaxBatch allows, which costs the
	// servers less CPU per entry when proposals arrive one by one.
	OrderDuringPersist bool
	// Rand returns a pseudo-random integer in [0, n); the only randomness the
	// node uses (election jitter). The simulator seeds it per node.
	Rand func(n int) int
	// Joining marks a server started with an empty log for a change that
	// adds it, before the change has committed; Voters is the configuration
	// the change makes. It must run before the change commits: when its
	// group's members cannot make the new majority without it (a group of
	// one grows to two), the change commits only with its acknowledgment.
	// Until its log holds a configuration entry or a snapshot, it only
	// learns (follows its coordinator, acknowledges, promises) and never
	// campaigns: if the change is never committed, nobody else uses
	// Voters, and it must not lead under it.
	Joining bool
	// Incarnation identifies this life of the server's durable state
	// (nonzero; a server that loses its disk comes back with another).
	// Every message carries it, and a vote counts only for the incarnation
	// the counter's configuration registers (quorum.Config.Incarnations).
	// Zero is allowed where durable state cannot be lost (tests).
	Incarnation uint64
	// Recovering marks a server whose storage found that durable state may
	// be missing (a lost hard state, a damaged record, a gap after a
	// snapshot): it may have made promises and acknowledgments it no
	// longer remembers. It learns, but promises, acknowledges and campaigns
	// only once its configuration registers Incarnation, which the leader
	// orders only after it asks (MsgRegister) and which counts its votes
	// only once committed: by then its log holds everything committed
	// before, so everything it may have acknowledged.
	Recovering bool
}

func (c *Config) validate() error {
	if c.ID == None {
		return errors.New("gpaxos: ID must not be zero")
	}
	if c.Voters.GroupOf(c.ID) < 0 {
		return errors.New("gpaxos: ID does not vote in Voters")
	}
	if c.Topology == nil {
		return errors.New("gpaxos: Topology is required")
	}
	if c.HeartbeatTicks <= 0 || c.ElectionTicks <= 2*c.HeartbeatTicks {
		return errors.New("gpaxos: need 0 < 2*HeartbeatTicks < ElectionTicks")
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 256
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 4 * c.MaxBatch
	}
	if c.Rand == nil {
		return errors.New("gpaxos: Rand is required (determinism: no global randomness)")
	}
	return nil
}
