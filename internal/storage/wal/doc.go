// Package wal is Giraffe's transaction log: an append-only sequence of
// records, each an opaque payload tagged with a strictly increasing zxid,
// stored in segment files of bounded size and made durable by an explicit
// Sync.
//
// # Durability contract
//
// Append only buffers. Everything appended before a call to Sync is on
// stable storage when that Sync returns nil, so a write may be acknowledged
// then and not before. Many Appends followed by one Sync is the intended
// pattern (group commit): under load the cost of the fsync is shared by the
// whole batch. A failed write or fsync makes the Log unusable (every later
// call returns the same error): after a failed fsync the kernel may already
// have dropped the dirty pages, so the only safe continuation is a restart,
// which recovers from what the disk really holds.
//
// # Recovery
//
// Open validates every record of every segment (lengths, both CRC-32C
// checksums, zxid order, the chain of segment headers). A bad record in the
// newest segment is a torn tail, what a crash in the middle of a write
// leaves, when nothing valid follows it or when it contains a whole
// never-written (zero) sector: either way no Sync covering it returned, so
// neither it nor anything after it was acknowledged. Open cuts a torn tail
// off and logs a warning with the file, the offset, the bytes dropped and
// why. Damage anywhere else means data that may have been acknowledged is
// unreadable; Open then fails with a *CorruptError naming the file and
// offset and changes nothing. docs/storage.md has the byte layout and the
// rules in full.
//
// # Namespace masks
//
// A log opened with Options.Tagged writes format version 2, whose records
// carry a namespace mask (AppendTagged) covered by the header checksum;
// otherwise it writes format version 1, without masks. Reading handles
// both. With Options.KeepDamaged, a version 2 record whose header holds but
// whose payload is damaged, and which is not a torn tail, is kept in place
// rather than failing Open: Damaged lists it and ReplayRecords hands it
// over marked damaged, so the caller can confine the loss to the
// namespaces the record touched.
//
// # Concurrency
//
// All methods of Log are safe for concurrent use. The expected user is one
// write loop that Appends a batch and then Syncs it. Sync does not hold the
// Log's lock while the fsync runs, so a pipelined user may keep appending
// the next batch from another goroutine during it. Replay holds the lock for
// its whole run; its callback must not call methods of the same Log.
//
// Records and Check read a log offline, without opening it: they take no
// lock and repair nothing, for tools that inspect a stopped server's log.
//
// Only one Log may be open on a directory: Open takes an exclusive flock on
// the file wal.lock in it, which the kernel releases if the process dies.
package wal
