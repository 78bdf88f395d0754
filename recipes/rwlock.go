package recipes

import "github.com/giraffe-coord/giraffe/client"

// The read/write lock is kazoo's (kazoo/recipe/lock.py ReadLock and
// WriteLock), Curator's InterProcessReadWriteLock in kazoo's node names:
// readers and writers queue under one path, readers as
// <uuid>__rlock__<seq>, writers as <uuid>__lock__<seq>. A reader waits
// only for the writers ahead of it, so consecutive readers hold together;
// a writer waits for everyone ahead of it. Each waiter watches only the
// nearest node it waits for. Grants keep the queue order between
// conflicting holds (a writer is never overtaken by a later reader, which
// also means readers cannot starve a writer).
//
// The lock-delay (WithLockDelay) is not applied to read/write locks: its
// marker names one holder, and readers hold together.

// NewReadLock returns a shared (read) contender for the read/write lock
// at path.
func NewReadLock(conn *client.Conn, path string, opts ...LockOption) *QueueLock {
	cfg := newLockConfig(opts)
	cfg.lockDelay = 0
	return &QueueLock{q: newQueueContender(conn, path, rlockNodeName, sharedBlockers, Shared, cfg)}
}

// NewWriteLock returns an exclusive (write) contender for the read/write
// lock at path. It is a QueueLock: kazoo's Lock, its WriteLock and ours
// are the same contender.
func NewWriteLock(conn *client.Conn, path string, opts ...LockOption) *QueueLock {
	cfg := newLockConfig(opts)
	cfg.lockDelay = 0
	return &QueueLock{q: newQueueContender(conn, path, lockNodeName, exclusiveBlockers, Exclusive, cfg)}
}

// RWLock pairs a read and a write contender of one session on one path,
// as sync.RWMutex pairs RLock and Lock. Both sides are Lockers; use each
// from one goroutine at a time.
type RWLock struct {
	// Read is the shared side.
	Read *QueueLock
	// Write is the exclusive side.
	Write *QueueLock
}

// NewRWLock returns a read/write lock at path for conn.
func NewRWLock(conn *client.Conn, path string, opts ...LockOption) *RWLock {
	return &RWLock{Read: NewReadLock(conn, path, opts...), Write: NewWriteLock(conn, path, opts...)}
}
