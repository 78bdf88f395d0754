// Package snap stores snapshots of the data tree: opaque bytes produced by
// the tree's encoder, framed with a header (magic, version, zxid) and a
// CRC-32C trailer, and published atomically.
//
// Save writes a snapshot to a temporary file, fsyncs it, renames it to
// snapshot.<zxid as 16 hex digits> and fsyncs the directory, so a snapshot
// under its final name is always complete. LoadNewest reads the newest
// snapshot whose checksum holds, skipping damaged ones with a warning (an
// older snapshot plus the transaction log recovers the same state), and
// fails when snapshot files exist but none is valid: starting from an empty
// tree then would silently lose everything (ZOOKEEPER-2325, -3056). Purge
// keeps the newest snapshots and the log segments needed to replay from the
// oldest of them.
//
// A snapshot also travels as a file of any name, a backup: Encode streams
// the bytes Save would write, Receive stores such a stream atomically once
// it is verified, and Inspect and ReadFile verify and read one.
//
// docs/storage.md describes the byte layout.
package snap
