package gpaxos

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// ID identifies a server. Zero means "none".
type ID = quorum.ID

// None is the ID of no server.
const None ID = 0

// Epoch is a global epoch: the ballot of one global leader's reign. At most
// one server leads a given epoch, because acceptors promise epochs strictly
// increasingly and a leader needs a quorum of promises.
type Epoch uint32

// Zxid orders entries: the global epoch in the high 32 bits, a counter that
// the epoch's leader increments per entry in the low 32 bits (ZooKeeper's
// layout). Zxid 0 precedes every entry.
type Zxid uint64

// MakeZxid returns the zxid of the counter-th entry of epoch e.
func MakeZxid(e Epoch, counter uint32) Zxid { return Zxid(uint64(e)<<32 | uint64(counter)) }

// Epoch returns the epoch whose leader proposed z.
func (z Zxid) Epoch() Epoch { return Epoch(z >> 32) }

// Counter returns z's position within its epoch.
func (z Zxid) Counter() uint32 { return uint32(z) }

func (z Zxid) String() string { return fmt.Sprintf("%d:%d", z.Epoch(), z.Counter()) }

// EntryType says what an entry carries.
type EntryType uint8

const (
	// EntryNormal carries an opaque client payload.
	EntryNormal EntryType = iota
	// EntryNoop is appended by a new global leader before anything else, so
	// that an entry of its own epoch commits before it accepts a
	// configuration change (docs/protocol.md §10).
	EntryNoop
	// EntryConfChange carries an encoded ConfChange.
	EntryConfChange
)

// Entry is one element of the replicated log.
type Entry struct {
	Zxid Zxid
	Type EntryType
	Data []byte
}

// HardState is the part of a node's state that must survive a crash. Every
// message a node sends reflects only hard state and entries that were made
// durable before the message left (see Ready), except its commit point,
// which may count entries still on their way to its own disk: a quorum
// holds them durably.
type HardState struct {
	// Promised is the highest global epoch this acceptor has promised; it
	// ignores every global-protocol message of an older epoch.
	Promised Epoch
	// Leader is the server the Promised epoch was promised to.
	Leader ID
	// Current is the epoch whose history the log follows: the log is a
	// prefix of the history of Current's leader. Current <= Promised.
	Current Epoch
	// GroupEpoch is the highest group epoch promised in this server's group.
	GroupEpoch uint64
	// Coordinator is the server GroupEpoch was promised to.
	Coordinator ID
	// Commit is a zxid known committed (a hint that saves re-learning it).
	Commit Zxid
}

// SameVotes reports whether hs and o differ at most in Commit: a hint the
// node re-learns from its coordinator, which needs no write of its own
// (a host writes it with the next change that matters).
func (hs HardState) SameVotes(o HardState) bool {
	hs.Commit = o.Commit
	return hs == o
}

// Snapshot is an application state covering every entry up to Index.
type Snapshot struct {
	Index Zxid
	// Voters is the voting configuration in force at Index.
	Voters quorum.Config
	// Data is the application's encoding of its state; opaque here.
	Data []byte
}
