package server

import (
	"sync"

	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
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
