// Package sim is Giraffe's deterministic simulator (`giraffe-lab sim`): many
// Group Paxos nodes (internal/gpaxos) in one process, on virtual time, over a
// simulated network and disk, under seeded fault injection, watched by
// independent checkers (agreement, durability, invariants after every step,
// linearizability of a key-value workload with porcupine).
//
// One seed determines the whole run: every random choice comes from
// math/rand sources derived from it, events are ordered by (virtual time,
// sequence number), and no map is iterated where order matters. A failing
// seed replays exactly.
//
// A run has a safety phase, in which faults are injected (message loss,
// delay, partitions of several kinds, crashes that lose every write not yet
// fsynced, restarts, pauses; in swarm mode also duplicated messages, skewed
// and drifting tick periods, stalled fsyncs; with --disk-faults, restarts
// that find durable state lost), then a liveness phase on a healed network
// with every server up, which must commit new writes and bring every server
// to the same state within a bound. The same machinery with a CPU, bandwidth and
// fsync cost model and no faults measures throughput (--bench), recovery
// after a crash (--failover) and which servers stop applying commits after
// crashes (--delivery).
//
// This package is never imported by production code.
package sim
