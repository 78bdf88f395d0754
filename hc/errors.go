package hc

import (
	"context"
	"errors"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Errors of the lock service.
var (
	// ErrHeld is TryAcquire's answer when another hold is in force (the
	// paper's sentinel sequencer).
	ErrHeld = errors.New("hc: lock is held")
	// ErrNoLock: no lock has this path (or it names a domain).
	ErrNoLock = errors.New("hc: no such lock")
	// ErrNoDomain: the domain of a new lock or domain does not exist.
	ErrNoDomain = errors.New("hc: no such domain")
	// ErrExists: CreateLock or CreateDomain of a path that exists.
	ErrExists = errors.New("hc: lock or domain exists")
	// ErrNotHeld: Release of a hold that has already ended (its session
	// expired), or of a lock this client does not hold.
	ErrNotHeld = errors.New("hc: not held")
	// ErrMoving: the lock was being moved between workers for longer than
	// the move wait (WithMoveWait); a later attempt finds it at its new
	// place.
	ErrMoving = errors.New("hc: lock is moving")
	// ErrNoCluster: no active worker ensemble is registered to place a
	// lock on.
	ErrNoCluster = errors.New("hc: no worker ensemble registered")
	// ErrExhausted: the lock's copy on its worker has used up its 32-bit
	// version (about four billion acquires); moving the lock to another
	// worker makes it usable again.
	ErrExhausted = errors.New("hc: lock copy's version exhausted; move the lock")
)

// errNotHere is a worker's answer when it does not (or no longer) hold a
// lock's current copy: the client looks the lock up again.
var errNotHere = errors.New("hc: lock not on this worker")

// errSessionEnded: the worker session ended during an attempt; the next
// attempt opens a new one.
var errSessionEnded = errors.New("hc: worker session ended")

// retryPause is the pause before retrying after a connection loss.
const retryPause = 10 * time.Millisecond

func isConnLoss(err error) bool { return errors.Is(err, zkproto.ErrConnectionLoss) }

func isSessionEnd(err error) bool {
	return errors.Is(err, zkproto.ErrSessionExpired) || errors.Is(err, client.ErrClosed)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
