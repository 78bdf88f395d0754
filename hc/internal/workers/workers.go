// Package workers keeps one ZooKeeper session per worker ensemble of the
// hierarchical lock service, opened on first use with the connect string
// the master's registry (/hc/clusters/<cid>) gives. The client library and
// the master daemon share it: a process talks to a worker through one
// session however many locks it uses there.
package workers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// ErrUnknownCluster is returned for a cluster id the registry does not
// have.
var ErrUnknownCluster = errors.New("hc: unknown cluster")

// Session is one session on one worker ensemble.
type Session struct {
	// Cluster is the worker's id.
	Cluster string
	// Conn is the session.
	Conn *client.Conn
	lost chan struct{}
}

// Lost is closed when the session has ended (expired or closed): every
// ephemeral node it created, hence every hold taken through it, is gone
// or going.
func (s *Session) Lost() <-chan struct{} { return s.lost }

// Name names the session in a worker lock's Holder field.
func (s *Session) Name() string { return layout.SessionName(s.Cluster, s.Conn.SessionID()) }

// Pool opens and keeps the sessions.
type Pool struct {
	master *client.Conn
	opts   []client.Option

	mu       sync.Mutex
	sessions map[string]*Session
	closed   bool
	// ended counts the sessions that have ended.
	ended int
}

// New returns a pool that finds workers through the master session and
// opens their sessions with opts.
func New(master *client.Conn, opts ...client.Option) *Pool {
	return &Pool{master: master, opts: opts, sessions: map[string]*Session{}}
}

// Get returns the session on worker cid, opening one if there is none or
// the last one ended.
func (p *Pool) Get(ctx context.Context, cid string) (*Session, error) {
	p.mu.Lock()
	if s := p.sessions[cid]; s != nil && !ended(s) {
		p.mu.Unlock()
		return s, nil
	}
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, client.ErrClosed
	}
	connect, err := p.connectString(ctx, cid)
	if err != nil {
		return nil, err
	}
	conn, err := client.Connect(ctx, strings.Split(connect, ","), p.opts...)
	if err != nil {
		return nil, fmt.Errorf("hc: worker %s: %w", cid, err)
	}
	s := &Session{Cluster: cid, Conn: conn, lost: make(chan struct{})}
	p.mu.Lock()
	if cur := p.sessions[cid]; p.closed || (cur != nil && !ended(cur)) {
		// Closed meanwhile, or another caller opened one first.
		p.mu.Unlock()
		conn.Close()
		if cur == nil {
			return nil, client.ErrClosed
		}
		return cur, nil
	}
	p.sessions[cid] = s
	p.mu.Unlock()
	go p.watch(s)
	return s, nil
}

// connectString reads the worker's connect string from the registry.
func (p *Pool) connectString(ctx context.Context, cid string) (string, error) {
	data, _, err := p.master.Get(ctx, layout.ClusterPath(cid))
	if errors.Is(err, zkproto.ErrNoNode) {
		return "", fmt.Errorf("%w %q", ErrUnknownCluster, cid)
	}
	if err != nil {
		return "", err
	}
	var rec layout.Cluster
	if err := layout.Unmarshal(data, &rec); err != nil {
		return "", err
	}
	return rec.Connect, nil
}

// watch marks s lost when its session ends and forgets it.
func (p *Pool) watch(s *Session) {
	for ev := range s.Conn.SessionEvents() {
		if ev.State.Final() {
			break
		}
	}
	close(s.lost)
	p.mu.Lock()
	p.ended++
	if p.sessions[s.Cluster] == s {
		delete(p.sessions, s.Cluster)
	}
	p.mu.Unlock()
}

func ended(s *Session) bool {
	select {
	case <-s.lost:
		return true
	default:
		return s.Conn.State().Final()
	}
}

// Ended returns how many of the pool's sessions have ended (expired, or
// closed by Close) since New.
func (p *Pool) Ended() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended
}

// Used returns the ids of the workers with a live session, sorted.
func (p *Pool) Used() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for cid, s := range p.sessions {
		if !ended(s) {
			out = append(out, cid)
		}
	}
	slices.Sort(out)
	return out
}

// Close ends every session.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	all := make([]*Session, 0, len(p.sessions))
	for _, s := range p.sessions {
		all = append(all, s)
	}
	p.mu.Unlock()
	for _, s := range all {
		s.Conn.Close()
	}
}

// EnsureCopy creates the copy of lock p on the worker conn is a session
// of, with rec, unless a copy exists (which it leaves as it is), creating
// the worker's directory first if needed; it retries through connection
// losses.
func EnsureCopy(ctx context.Context, conn *client.Conn, p string, rec layout.WorkerLock) error {
	node, data := layout.WorkerLockPath(p), layout.Marshal(rec)
	for {
		_, _, err := conn.Create(ctx, node, data, client.Persistent, zkproto.OpenACLUnsafe)
		switch {
		case err == nil, errors.Is(err, zkproto.ErrNodeExists):
			return nil
		case errors.Is(err, zkproto.ErrNoNode):
			for _, dir := range []string{layout.Root, layout.LocksDir} {
				if _, _, err := conn.Create(ctx, dir, nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil &&
					!errors.Is(err, zkproto.ErrNodeExists) && !errors.Is(err, zkproto.ErrConnectionLoss) {
					return err
				}
			}
		case errors.Is(err, zkproto.ErrConnectionLoss):
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		default:
			return err
		}
	}
}

// FinishCreate completes the creation of lock p whose master record (at
// version, read through master) is still Creating: the worker copy
// (enabled, generation 0), then the record. Both steps are idempotent,
// so the creator, a client that locates the lock and the daemon may all
// run it. A copy that exists is left as it is: copies are never deleted,
// so an existing one was made by this creation before.
func FinishCreate(ctx context.Context, master *client.Conn, pool *Pool, p string, rec layout.Node, version int32) error {
	ws, err := pool.Get(ctx, rec.Cluster)
	if err != nil {
		return err
	}
	cp := layout.WorkerLock{State: layout.Enabled, Placement: rec.Placement}
	if err := EnsureCopy(ctx, ws.Conn, p, cp); err != nil {
		return err
	}
	rec.Creating = false
	_, err = master.Set(ctx, layout.NamePath(p), layout.Marshal(rec), version)
	if err != nil && !errors.Is(err, zkproto.ErrBadVersion) && !errors.Is(err, zkproto.ErrConnectionLoss) {
		// BADVERSION: someone else finished it; a lost reply shows in
		// the caller's next read.
		return err
	}
	return nil
}
