package wal

import (
	"errors"
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

// CorruptError reports log data that fails validation somewhere other than
// a torn tail, so that repairing it could lose acknowledged writes. Open and
// Replay return it; nothing is truncated or skipped when it occurs.
type CorruptError struct {
	// File is the path of the damaged segment.
	File string
	// Offset is the byte offset in File of the first record (or header)
	// that fails validation.
	Offset int64
	// Reason says what failed.
	Reason string
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("wal: corrupt log %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

var (
	// ErrClosed is returned by every method of a closed Log.
	ErrClosed = errors.New("wal: log is closed")
	// ErrZxidOrder is wrapped by Append when a zxid is not greater than the
	// last one in the log.
	ErrZxidOrder = errors.New("wal: zxids must be positive and strictly increasing")
	// ErrTooLarge is wrapped by Append when a payload exceeds
	// MaxPayloadBytes.
	ErrTooLarge = errors.New("wal: payload too large")
	// ErrPurged is wrapped by Replay when records it would have to replay
	// were deleted by a purge (replaying from a snapshot older than the
	// oldest one the purge kept).
	ErrPurged = errors.New("wal: records needed for replay were purged")
	// ErrLocked is wrapped by LockDir when a Log is open on the
	// directory or its lock is held, and by Open when another process or
	// a LockDir holds the lock.
	ErrLocked = fsutil.ErrLocked
)

// corrupt builds a *CorruptError.
func corrupt(file string, off int64, format string, args ...any) *CorruptError {
	return &CorruptError{File: file, Offset: off, Reason: fmt.Sprintf(format, args...)}
}
