// Package txn defines the replicated entry: what a write request becomes once
// it is ordered, and its binary encoding for the log and the network.
//
// An Entry carries everything that must be equal on every replica that
// applies it: the zxid, the time of the write (decided by the proposer, never
// read at apply), the issuing session, the authenticated ids used for ACL
// checks, and the request itself as an Op. The data tree decides the outcome
// of an entry (success or a ZooKeeper error code) from its own state when it
// applies the entry, so a write that fails is still an ordered entry, as
// ZooKeeper's error transactions are; Result is that outcome.
//
// The encoding (Marshal, Unmarshal) is versioned by its first byte, compact
// (a field is written only when it is set, marked by a presence bit) and
// keeps nil slices apart from empty ones. Unmarshal is bounds-checked, never
// panics on arbitrary input, and whatever it accepts re-encodes to bytes that
// decode to the same entry.
package txn
