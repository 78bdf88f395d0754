package recipes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// LockKinds names the exclusive locks of The Cost of Consensus and the
// reactive lock, as the command line (giraffe lock --kind) and the
// benchmarks call them.
var LockKinds = []string{"tas-sync", "tas-async", "queue-sync", "queue-async", "reactive"}

// NewLockOfKind returns a contender of the kind named (one of LockKinds)
// for the lock at path; ok is false for an unknown kind.
func NewLockOfKind(kind string, conn *client.Conn, path string, opts ...LockOption) (l Locker, ok bool) {
	switch kind {
	case "tas-sync":
		return NewTASLock(conn, path, opts...), true
	case "tas-async":
		return NewAsyncTASLock(conn, path, opts...), true
	case "queue-sync":
		return NewQueueLock(conn, path, opts...), true
	case "queue-async":
		return NewAsyncQueueLock(conn, path, opts...), true
	case "reactive":
		return NewReactiveLock(conn, path, opts...), true
	}
	return nil, false
}

// Locker is a distributed lock held by one client session. A Locker value
// is one contender: Lock and Unlock are not reentrant and are meant to be
// called by one goroutine at a time; Sequencer may be called from any.
//
// A hold also ends, on the server, when the session expires; the holder
// then learns it from the Conn's SessionEvents (and Unlock fails with
// zkproto.ErrSessionExpired). That is why a holder that acts on other
// services should hand them a Sequencer to check.
type Locker interface {
	// Lock blocks until the lock is held or ctx ends; on a ctx error
	// nothing is held and the contender's node, if any, is removed in the
	// background.
	Lock(ctx context.Context) error
	// Unlock releases the hold.
	Unlock(ctx context.Context) error
	// Sequencer describes the current hold (Chubby's sequencer); it fails
	// with ErrNotLocked when the lock is not held.
	Sequencer() (Sequencer, error)
}

// Mode is the mode a lock is held in.
type Mode uint8

// Lock modes.
const (
	// Exclusive holds exclude every other hold.
	Exclusive Mode = iota + 1
	// Shared holds (read locks) exclude only exclusive ones.
	Shared
)

// String returns "exclusive" or "shared".
func (m Mode) String() string {
	switch m {
	case Exclusive:
		return "exclusive"
	case Shared:
		return "shared"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Errors of the lock recipes.
var (
	// ErrNotLocked: Unlock or Sequencer on a lock that is not held.
	ErrNotLocked = errors.New("recipes: lock not held")
	// ErrAlreadyLocked: Lock on a Locker that already holds (the locks are
	// not reentrant).
	ErrAlreadyLocked = errors.New("recipes: lock already held by this contender")
	// ErrLockNodeLost: the contender's node vanished while it waited,
	// which happens only when its session ended.
	ErrLockNodeLost = errors.New("recipes: lock node vanished while waiting")
)

// LockOption configures a lock.
type LockOption func(*lockConfig)

type lockConfig struct {
	acl          []zkproto.ACL
	data         []byte
	lockDelay    time.Duration
	pollInterval time.Duration
	maxInFlight  int
}

// Defaults of the asynchronous locks' polling.
const (
	// DefaultPollInterval is how often the asynchronous locks send a new
	// attempt. The Cost of Consensus polls "at a fixed interval"; 2 ms
	// keeps a loopback server busy but not saturated with 50 pollers.
	DefaultPollInterval = 2 * time.Millisecond
	// defaultMaxInFlight bounds the attempts one asynchronous contender has
	// on the wire, so that a slow server (or a long RTT) does not make a
	// poller queue without limit.
	defaultMaxInFlight = 16
	// MaxLockDelay is Chubby's upper bound on the lock-delay.
	MaxLockDelay = time.Minute
)

func newLockConfig(opts []LockOption) lockConfig {
	cfg := lockConfig{
		acl:          zkproto.OpenACLUnsafe,
		pollInterval: DefaultPollInterval,
		maxInFlight:  defaultMaxInFlight,
	}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.lockDelay = min(max(cfg.lockDelay, 0), MaxLockDelay)
	if cfg.pollInterval <= 0 {
		cfg.pollInterval = DefaultPollInterval
	}
	return cfg
}

// WithACL sets the ACL of the nodes the lock creates (default: open).
func WithACL(acl []zkproto.ACL) LockOption { return func(c *lockConfig) { c.acl = acl } }

// WithIdentifier sets the data of the contender's node, as kazoo's
// identifier: tools list the contenders by it.
func WithIdentifier(id []byte) LockOption { return func(c *lockConfig) { c.data = id } }

// WithLockDelay sets Chubby's lock-delay (capped at MaxLockDelay): when a
// holder's session ends without an Unlock, the next holder is not granted
// the lock until d has passed since its acquisition observed the loss.
// Every contender of one path must use the option (each honors the delay
// the lost holder asked for). See sequencer_delay.go for how it works.
// The read/write locks ignore it.
func WithLockDelay(d time.Duration) LockOption { return func(c *lockConfig) { c.lockDelay = d } }

// WithPollInterval sets how often the asynchronous locks send an attempt.
func WithPollInterval(d time.Duration) LockOption {
	return func(c *lockConfig) { c.pollInterval = d }
}

// joinPath appends a child name to a directory path.
func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// validLockPath checks the lock directory's path before it is used to
// build node names; the server checks the rest.
func validLockPath(p string) error {
	if p == "" || p[0] != '/' || (len(p) > 1 && strings.HasSuffix(p, "/")) {
		return zkproto.ErrBadArguments
	}
	return nil
}

// newContenderPrefix returns a fresh uuid (32 hex digits, as kazoo's
// uuid4().hex) for a contender's node name: after a connection loss during
// a sequential create, the contender finds its node by this prefix
// (Curator's protection mode), because the create's reply, and so the
// node's name, is lost.
func newContenderPrefix() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

// ensurePath creates p and its missing ancestors as persistent nodes, as
// kazoo's ensure_path does (persistent rather than Curator's containers,
// so that a lock directory never disappears under a contender about to
// create its node in it).
func ensurePath(ctx context.Context, conn *client.Conn, p string, acl []zkproto.ACL) error {
	for {
		_, _, err := conn.Create(ctx, p, nil, client.Persistent, acl)
		switch {
		case err == nil, errors.Is(err, zkproto.ErrNodeExists):
			return nil
		case errors.Is(err, zkproto.ErrNoNode):
			parent := p[:strings.LastIndexByte(p, '/')]
			if parent == "" {
				return err
			}
			if err := ensurePath(ctx, conn, parent, acl); err != nil {
				return err
			}
		case errors.Is(err, zkproto.ErrConnectionLoss):
			// The Conn is reconnecting; the next call waits for it.
			if err := pause(ctx, retryBackoff); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// retryBackoff is the pause before retrying after a connection loss: the
// Conn queues the retry until it has reconnected, so a short pause only
// avoids spinning while it notices the loss.
const retryBackoff = 10 * time.Millisecond

// pause sleeps for d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitEvent waits for a one-shot watch to fire (or end) or for ctx.
func waitEvent(ctx context.Context, w <-chan client.Event) error {
	select {
	case ev := <-w:
		if ev.Err != nil {
			return ev.Err
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isConnLoss reports an error after which the outcome of a write is
// unknown and the step must be re-checked.
func isConnLoss(err error) bool { return errors.Is(err, zkproto.ErrConnectionLoss) }

// cleanupTimeout bounds the background removal of a contender's node after
// Lock gave up.
const cleanupTimeout = 30 * time.Second

// deleteInBackground removes a node a failed Lock leaves behind. It runs
// without the caller's (ended) context; errors are ignored because the
// node is ephemeral and goes with the session in the worst case.
func deleteInBackground(conn *client.Conn, p string) {
	conn.DeleteAsync(p, client.AnyVersion)
}

// abandonCreate deletes the node a pending create makes, once it has
// completed: a Lock that gives up while a create is on the wire must not
// leave a node behind that would block every other contender until the
// session ends.
func abandonCreate(conn *client.Conn, cl *client.Call[client.CreateResult]) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if res, err := cl.Wait(ctx); err == nil {
			deleteInBackground(conn, res.Path)
		}
	}()
}
