// Package hc is the client library of the hierarchical lock service: a
// Chubby-like lock service spread over several ZooKeeper ensembles, as
// the paper "Hierarchical Chubby: A Scalable, Distributed Locking
// Service" designs it, built on Giraffe (or ZooKeeper) ensembles through
// the ZooKeeper API alone. docs/hierarchical-locks.md describes the
// service, its znode layout (package hc/layout), the move protocol and
// why it never grants a lock to two holders.
//
// A master ensemble maps every lock to the worker ensemble that holds it;
// the worker holds the lock's state. A Client (the paper's Lock Client)
// asks the master where a lock lives once, caches the answer with a watch
// on the master's record, and from then on talks only to the worker, over
// one session per worker it uses. Locks are paths; the components before
// the last name the lock's domain, which tells the service which locks
// are used together (a new lock lands on its domain's worker, and the
// daemon that moves locks between workers keeps domains whole where it
// can).
//
// A hold is an ephemeral node on the worker, so it ends with its session:
// a holder that crashes or is cut off for longer than its session timeout
// loses the lock. TryAcquire and Acquire return a Hold whose Sequencer
// (the lock, its worker and a generation) the holder hands to other
// services; the generation grows with every acquire and across moves, so a
// service can fence with one integer per lock, and Validate tells whether
// the hold a sequencer names is still in force. After a hold ends with its
// session rather than a release, the next holder waits out the lost
// holder's lock-delay (Chubby's) before Acquire returns.
package hc
