// Package recipes builds coordination primitives on package client, with
// the znode layouts of Curator and kazoo wherever those define one, so
// that a Giraffe Go client and a kazoo or Curator client cooperate on the
// same paths.
//
// The package has two halves.
//
// Locks (lock*.go, tas*.go, queuelock*.go, reactive*.go, rwlock*.go,
// sequencer*.go): every lock implements Locker.
//
//   - TASLock is the synchronous test-and-set lock of The Cost of
//     Consensus: every contender creates the same ephemeral node; a
//     contender that finds it taken waits on an exists watch and tries
//     again.
//   - AsyncTASLock is its asynchronous variant: create attempts pipelined on
//     a timer, no watches.
//   - QueueLock is the synchronous queue lock (ZooKeeper's lock recipe):
//     an ephemeral sequential node per contender, each watching only its
//     predecessor, so a release wakes one client (no herd effect). Its nodes
//     are kazoo's (<uuid>__lock__<seq>) and are ordered by kazoo's rule, so a
//     kazoo Lock on the same path and a QueueLock exclude each other.
//   - AsyncQueueLock creates its node in parallel with polling the children
//     on a timer, without watches.
//   - ReactiveLock is a queue lock that measures the client's round trip
//     and, before each acquisition, waits the synchronous or the
//     asynchronous way, whichever is faster at that round trip (both are
//     one queue; docs/primitives.md has the rule and the measurements).
//   - NewReadLock and NewWriteLock are the read/write lock, in kazoo's
//     layout (__rlock__ and __lock__ nodes in one queue): readers wait only
//     for earlier writers.
//
// A holder can ask its lock for a Sequencer (Chubby's: lock path, mode and
// generation), pass it to another service as a string, and that service
// checks it with ValidateSequencer before acting on the holder's behalf.
// WithLockDelay gives Chubby's lock-delay: after a holder's session ends
// without a release, nobody is granted the lock for the delay.
// The tests check every lock's acquire/release histories with an
// independent checker (internal/lockcheck: mutual exclusion, FIFO order,
// liveness, lock-delay).
//
// Barrier is kazoo's Barrier (up while its node exists; Wait blocks until
// it is removed, surviving connection loss). Counter is a shared integer in
// kazoo's Counter layout (decimal text,
// versioned set retried on a conflict), shared with kazoo's Counter.
// LockContenders lists a queue lock's contenders in kazoo's order (a kazoo
// Election's candidates, the leader first).
//
// DoubleBarrier is the ZooKeeper paper's double barrier in kazoo's layout.
// Semaphore is kazoo's Semaphore (leases under a node recording their
// number, a queue lock in front). Party and ShallowParty are kazoo's group
// membership. Queue is kazoo's priority queue (at-most-once consumption);
// LockingQueue its reliable one (items locked, then consumed or released).
// SharedConfig is the ZooKeeper paper's "ready" znode pattern for a
// configuration of several values published by one writer.
package recipes
