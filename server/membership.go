package server

import (
	"encoding/binary"
	"sync"

	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// This file is the ensemble's membership as the server sees it: the
// address book of every member and the history of joins and departures
// from which the forest (and so each server's group) is derived. It lives
// in "/zookeeper/config", where ZooKeeper 3.5+ publishes its own ensemble
// (server.N lines), so that it is replicated, snapshotted and readable by
// any ZooKeeper client. A configuration change carries the whole new
// membership as its context (members.Membership.Encode); every replica
// writes it to the node when the change commits.

// membershipState is the server's committed membership and voting
// configuration, changed by the applier.
type membershipState struct {
	mu      sync.Mutex
	m       members.Membership
	voters  quorum.Config
	changed chan struct{} // closed and replaced on every change
	// reconfigMu makes a leader handle one join or departure at a time.
	reconfigMu sync.Mutex
}

func (ms *membershipState) set(m members.Membership, voters quorum.Config) {
	ms.mu.Lock()
	ms.m, ms.voters = m, voters
	if ms.changed != nil {
		close(ms.changed)
	}
	ms.changed = make(chan struct{})
	ms.mu.Unlock()
}

func (ms *membershipState) get() (members.Membership, quorum.Config, <-chan struct{}) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.changed == nil {
		ms.changed = make(chan struct{})
	}
	return ms.m.Clone(), ms.voters, ms.changed
}

// setVoters changes the voting configuration and keeps the membership.
func (ms *membershipState) setVoters(voters quorum.Config) {
	ms.mu.Lock()
	m := ms.m
	ms.mu.Unlock()
	ms.set(m, voters)
}

// A configuration change's context (replica.ConfCommitted.Context) is the
// membership after the change, in the /zookeeper/config format, behind
// confContextMagic and the time (ms) the proposer decided for the write of
// /zookeeper/config: every replica applies it with that time, so their
// trees, digests and snapshots stay equal. Contexts without the magic,
// ordered before it existed, carry the membership alone and write time 0.
const confContextMagic = "GCC1"

// encodeConfContext builds a change's context.
func encodeConfContext(timeMs int64, membership []byte) []byte {
	b := binary.BigEndian.AppendUint64([]byte(confContextMagic), uint64(timeMs))
	return append(b, membership...)
}

// decodeConfContext splits a change's context into its time and its
// membership.
func decodeConfContext(ctx []byte) (timeMs int64, membership []byte) {
	if len(ctx) >= len(confContextMagic)+8 && string(ctx[:len(confContextMagic)]) == confContextMagic {
		return int64(binary.BigEndian.Uint64(ctx[len(confContextMagic):])), ctx[len(confContextMagic)+8:]
	}
	return 0, ctx
}

// configView is what reads of /zookeeper/config show, given the node's
// replicated data and Stat. Once a configuration change has committed the
// node holds the membership and is shown as it is. Until then it is empty
// in the tree, and the ensemble runs with the membership of its zoo.cfg:
// reads show that membership with version 0, as a ZooKeeper ensemble
// started from a static zoo.cfg shows its own, so that clients which find
// the ensemble there (Curator's EnsembleTracker, zkCli's config) see every
// server. A standalone server has no membership and its node stays empty,
// as ZooKeeper's does.
func (s *Server) configView(data []byte, stat zkproto.Stat) ([]byte, zkproto.Stat) {
	if stat.DataLength > 0 {
		return data, stat
	}
	m, _, _ := s.membership.get()
	if len(m.Members) == 0 {
		return data, stat
	}
	data = append(m.Encode(), "version=0\n"...)
	stat.DataLength = int32(len(data))
	return data, stat
}
