package hc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc/internal/workers"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Defaults of a Client.
const (
	// DefaultLockDelay is the lock-delay a holder asks for: Chubby's
	// default of one minute. After a hold ends with its session rather
	// than a release, the next holder waits this long before it acts.
	DefaultLockDelay = time.Minute
	// MaxLockDelay bounds the lock-delay anyone can impose, as in Chubby.
	MaxLockDelay = time.Minute
	// DefaultMoveWait is how long TryAcquire follows a lock that is being
	// moved before it gives up with ErrMoving. A move of a free lock
	// takes a few round trips; a longer wait means the daemon is down.
	DefaultMoveWait = 2 * time.Second
	// relocatePoll bounds a wait for the master's record of a moving lock
	// to change, in case its watch is lost with a reconnection.
	relocatePoll = 100 * time.Millisecond
)

// Option configures NewClient.
type Option func(*config)

type config struct {
	lockDelay, moveWait time.Duration
	workerOpts          []client.Option
	masterOpts          []client.Option
}

// WithLockDelay sets the lock-delay this client's holds ask for (capped
// at MaxLockDelay; 0 for none).
func WithLockDelay(d time.Duration) Option {
	return func(c *config) { c.lockDelay = min(max(d, 0), MaxLockDelay) }
}

// WithMoveWait sets how long TryAcquire follows a moving lock.
func WithMoveWait(d time.Duration) Option { return func(c *config) { c.moveWait = d } }

// WithWorkerOptions sets the options of the sessions on worker ensembles
// (the session timeout among them: a hold ends when its session does).
func WithWorkerOptions(opts ...client.Option) Option {
	return func(c *config) { c.workerOpts = append(c.workerOpts, opts...) }
}

// WithMasterOptions sets the options of the session on the master
// ensemble.
func WithMasterOptions(opts ...client.Option) Option {
	return func(c *config) { c.masterOpts = append(c.masterOpts, opts...) }
}

// Client is the paper's Lock Client: one session on the master ensemble,
// one per worker ensemble used, a cache of lock locations, and the holds
// taken through it. Its methods may be called from many goroutines.
type Client struct {
	master *client.Conn
	pool   *workers.Pool
	cfg    config

	mu    sync.Mutex
	cache map[string]location
	holds map[string]*Hold
}

// location is a cached answer of the master: the worker of a lock, valid
// until the watch set by the read that gave it fires.
type location struct {
	cluster string
	changed <-chan client.Event
}

func (l location) stale() bool {
	select {
	case <-l.changed:
		return true
	default:
		return false
	}
}

// NewClient connects to the master ensemble (the paper's
// CreateLockClient).
func NewClient(ctx context.Context, master []string, opts ...Option) (*Client, error) {
	cfg := config{lockDelay: DefaultLockDelay, moveWait: DefaultMoveWait}
	for _, o := range opts {
		o(&cfg)
	}
	conn, err := client.Connect(ctx, master, cfg.masterOpts...)
	if err != nil {
		return nil, err
	}
	return &Client{master: conn, pool: workers.New(conn, cfg.workerOpts...), cfg: cfg,
		cache: map[string]location{}, holds: map[string]*Hold{}}, nil
}

// Close ends the client's sessions (the paper's DestroyLockClient); its
// holds end with them.
func (c *Client) Close() error {
	c.pool.Close()
	return c.master.Close()
}

// Workers returns the ids of the worker ensembles this client has a live
// session with.
func (c *Client) Workers() []string { return c.pool.Used() }

// SessionsEnded returns how many of this client's worker sessions have
// ended, by expiry or Close: while the client is open, each is a session
// it lost and had to open again (with its holds lost).
func (c *Client) SessionsEnded() int { return c.pool.Ended() }

// Locate returns the id of the worker ensemble that holds lock p, from the
// cache when its entry is still valid.
func (c *Client) Locate(ctx context.Context, p string) (string, error) {
	if err := layout.CheckPath(p); err != nil {
		return "", err
	}
	l, err := c.locate(ctx, p, false)
	return l.cluster, err
}

// locate answers from the cache, or reads the master's record of p with
// a watch that invalidates the answer when the record changes. fresh
// skips the cache and syncs first, so that the answer is at least as new
// as anything any client saw before the call.
func (c *Client) locate(ctx context.Context, p string, fresh bool) (location, error) {
	if !fresh {
		c.mu.Lock()
		l, ok := c.cache[p]
		c.mu.Unlock()
		if ok && !l.stale() {
			return l, nil
		}
	}
	node := layout.NamePath(p)
	for {
		if fresh {
			if _, err := c.master.Sync(ctx, node); err != nil && !errors.Is(err, zkproto.ErrNoNode) {
				if isConnLoss(err) {
					if err := sleep(ctx, retryPause); err != nil {
						return location{}, err
					}
					continue
				}
				return location{}, err
			}
		}
		data, st, ch, err := c.master.GetW(ctx, node)
		switch {
		case errors.Is(err, zkproto.ErrNoNode):
			return location{}, fmt.Errorf("%w: %s", ErrNoLock, p)
		case isConnLoss(err):
			if err := sleep(ctx, retryPause); err != nil {
				return location{}, err
			}
			continue
		case err != nil:
			return location{}, err
		}
		var rec layout.Node
		if err := layout.Unmarshal(data, &rec); err != nil {
			return location{}, err
		}
		if rec.Kind != layout.KindLock {
			return location{}, fmt.Errorf("%w: %s is a domain", ErrNoLock, p)
		}
		if rec.Creating {
			if err := c.finishCreate(ctx, p, rec, st.Version); err != nil {
				return location{}, err
			}
			fresh = true
			continue
		}
		l := location{cluster: rec.Cluster, changed: ch}
		c.mu.Lock()
		c.cache[p] = l
		c.mu.Unlock()
		return l, nil
	}
}

// waitMoved waits until the master's record behind l changes, or a short
// poll interval, or until the deadline.
func waitMoved(ctx context.Context, l location, deadline time.Time) error {
	d := min(time.Until(deadline), relocatePoll)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.changed:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
