package replica

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// Transport moves protocol messages between servers. Send must not block
// for long (the replica's one goroutine calls it); lost messages are
// tolerated by the protocol. Received messages arrive on Recv in batches,
// in order per sending peer; a batch holds what arrived while the replica
// was busy, so that one fsync covers it all.
type Transport interface {
	Send(m gpaxos.Message)
	Recv() <-chan []gpaxos.Message
}

// Config configures a Replica.
type Config struct {
	// ID is this server; it must vote in Voters.
	ID gpaxos.ID
	// Voters is the ensemble's voting configuration (group per server).
	Voters quorum.Config
	// Joining: this server was started for a change adding it that may not
	// have committed yet (gpaxos.Config.Joining).
	Joining bool
	// Topology routes a group's messages from its coordinator.
	Topology gpaxos.Topology
	// Dir holds the log, the snapshots and the hard state.
	Dir string
	// Tick is the length of one protocol tick.
	Tick time.Duration
	// HeartbeatTicks and ElectionTicks: see gpaxos.Config.
	HeartbeatTicks, ElectionTicks int
	// MaxBatch bounds the entries of one append; zero means 1024.
	MaxBatch int
	// ProposalTimeout bounds the interval between resends of a proposal
	// that does not commit (streams.go); zero means 10 election timeouts.
	ProposalTimeout time.Duration
	// SettleTimeout bounds how long proposals in flight wait for a leader
	// change to settle before they are abandoned; zero means
	// ProposalTimeout. A server that closes its clients' connections by
	// itself when it loses contact with a quorum sets it to the longest
	// such wait it allows, so that clients see a leader change as a delay
	// for as long as their sessions tolerate one.
	SettleTimeout time.Duration
	// NoSync skips fsync (tests and benchmarks only; see wal.Options).
	NoSync bool
	// SnapRetain is how many snapshots to keep; zero means 3.
	SnapRetain int
	// Transport carries messages; required.
	Transport Transport
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Seed seeds the election jitter; zero picks one from the ID.
	Seed int64
	// OnConfig, when set, is called from the replica's goroutine for every
	// configuration entry as it is appended (before the messages that
	// relay it leave) and for those found in the log at Open, oldest
	// first: the server learns there the addresses of servers being added
	// (the entry's context) while the change is still in flight. It must
	// not block.
	OnConfig func(voters quorum.Config, context []byte)
	// OnSync, when set, is called from the replica's goroutine after each
	// fsync of the log with the number of entries it made durable and how
	// long it took (the server's fsync metrics). It must not block.
	OnSync func(entries int, took time.Duration)
	// LogWritten, when set, counts the bytes of every record appended to
	// the log (wal.Options.Written): what the replica writes to disk, the
	// server's giraffe_log_bytes_written_total.
	LogWritten *atomic.Uint64
	// OnStatus, when set, is called from the replica's goroutine with the
	// previous and the new status whenever the role, the leader, the epoch
	// or the promised epoch changes (the server's election metrics). It
	// must not block.
	OnStatus func(prev, cur Status)
	// OnLeaderReceived: see HostConfig.OnLeaderReceived.
	OnLeaderReceived func(origin gpaxos.ID, body []byte)
	// OnLeaderAppend: see HostConfig.OnLeaderAppend. It is called from the
	// replica's goroutine and must not block.
	OnLeaderAppend func(LeaderAppend)
	// AcceptEarly: see HostConfig.AcceptEarly.
	AcceptEarly bool
	// SkipSync, when set, says of a proposal's body (as its origin passed
	// it to Propose) that a Ready appending only such proposals, and
	// changing neither the votes in the hard state nor the log's base,
	// may be acknowledged with its entries written but not fsynced. An
	// acknowledgment then speaks for state a machine crash can lose (a
	// later fsync covers it): the comparison baseline of weak namespaces
	// only, never for data that must survive a power loss.
	SkipSync func(body []byte) bool
}

func (c *Config) fill() error {
	if c.Transport == nil {
		return errors.New("replica: Transport is required")
	}
	if c.Dir == "" {
		return errors.New("replica: Dir is required")
	}
	if c.Tick <= 0 {
		c.Tick = 50 * time.Millisecond
	}
	if c.HeartbeatTicks <= 0 {
		c.HeartbeatTicks = 2
	}
	if c.ElectionTicks <= 0 {
		c.ElectionTicks = 10 * c.HeartbeatTicks
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 1024
	}
	if c.ProposalTimeout <= 0 {
		c.ProposalTimeout = 10 * time.Duration(c.ElectionTicks) * c.Tick
	}
	if c.SettleTimeout <= 0 {
		c.SettleTimeout = c.ProposalTimeout
	}
	if c.SnapRetain <= 0 {
		c.SnapRetain = 3
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Seed == 0 {
		c.Seed = int64(c.ID)*7919 + time.Now().UnixNano()
	}
	return nil
}
