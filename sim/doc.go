// Package sim is Giraffe's deterministic simulator (`giraffe-lab sim`): many
// servers in one process, on virtual time, over a simulated network and
// disk, under seeded fault injection, watched by independent checkers
// (agreement of the committed sequence and of the data trees, exactly-once
// commits, durability, invariants after every step, linearizability of a
// register workload with porcupine).
//
// Each server runs what production runs: a replica host
// (internal/replica.Host, the Group Paxos node of internal/gpaxos with its
// proposal streams, sequencer and recovery), driven as replica.Replica
// drives it, applying what commits to a data tree (internal/datatree). Its
// clients read, write and compare-and-set znodes through the log, and are
// answered from the tree as a server answers its own clients. With the
// session layer (sessions.go), lock clients hold an ephemeral znode under
// sessions that the servers guard and expire with internal/sessions, as
// production servers do, and a checker sees that no two connected clients
// ever hold the lock.
//
// One seed determines the whole run: every random choice comes from
// math/rand sources derived from it, events are ordered by (virtual time,
// sequence number), and no map is iterated where order matters. A failing
// seed replays exactly.
//
// A run has a safety phase, in which faults are injected (message loss,
// delay, partitions of several kinds, crashes that lose every write not yet
// fsynced, restarts, pauses; in swarm mode also duplicated messages, skewed
// and drifting tick periods, stalled fsyncs, restarts that find durable
// state lost, the session layer), then a liveness phase on a healed network with every server
// up, which must commit new writes, a probe proposed by every server, and
// bring every server to the same state within a bound. The same machinery with a CPU, bandwidth and
// fsync cost model and no faults measures throughput (--bench), recovery
// after a crash (--failover) and which servers stop applying commits after
// crashes (--delivery).
//
// This package is never imported by production code.
package sim
