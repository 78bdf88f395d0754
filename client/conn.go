package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// Conn is a ZooKeeper session. It is safe for concurrent use.
//
// Concurrency: the session loop (session.go) dials, handshakes and
// reconnects; while a connection is up, a writer goroutine sends queued
// requests and pings and a reader goroutine decodes replies and
// notifications (io.go). All shared state is guarded by mu; no I/O is done
// while holding it.
type Conn struct {
	cfg     config
	log     *slog.Logger
	servers []string

	mu        sync.Mutex
	state     State
	sessionID int64
	passwd    []byte
	timeout   time.Duration // negotiated; 0 before the first connection
	lastZxid  int64
	cur       *netConn // nil while disconnected
	server    string   // address of cur
	nextXid   zkproto.Xid
	// outbox holds submitted requests not yet written, pending those
	// written and not yet completed; every call in pending was submitted
	// before every call in outbox, so failing pending then outbox keeps
	// FIFO order.
	outbox  []*call
	pending []*call
	auths   []authInfo
	watches watchRegistry
	// terminal is the error every call gets once the session is over
	// (ErrSessionExpired, ErrAuthFailed, ErrClosed); nil while alive.
	terminal error
	closing  bool
	// connected is closed at the first successful handshake (Connect waits
	// on it); lastErr is the last connection error, for Connect's report.
	connected chan struct{}
	lastErr   error

	events *pump[SessionEvent]

	quit     chan struct{} // closed when the session loop must stop
	quitOnce sync.Once
	abort    chan struct{} // closed by Close: pumps stop delivering
	loopWG   sync.WaitGroup
	pumpWG   sync.WaitGroup
	closeMu  sync.Mutex
	closed   bool
}

// Connect opens a session on one of servers ("host:port"; the port
// defaults to 2181) and returns once the session is established, or fails
// when ctx ends first. ctx bounds only the connection; the Conn lives until
// Close or the end of its session.
func Connect(ctx context.Context, servers []string, opts ...Option) (*Conn, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	list, err := parseServers(servers, cfg.shuffle)
	if err != nil {
		return nil, err
	}
	c := &Conn{
		cfg:       cfg,
		log:       cfg.log,
		servers:   list,
		state:     StateDisconnected,
		passwd:    make([]byte, 16),
		auths:     append([]authInfo(nil), cfg.auths...),
		watches:   newWatchRegistry(),
		connected: make(chan struct{}),
		quit:      make(chan struct{}),
		abort:     make(chan struct{}),
	}
	c.events = newPump[SessionEvent](c)
	c.loopWG.Add(1)
	go c.run()
	select {
	case <-c.connected:
		return c, nil
	case <-c.quit: // the session ended before it was usable
		c.mu.Lock()
		err := c.terminal
		c.mu.Unlock()
		c.Close()
		return nil, fmt.Errorf("client: connecting to %v: %w", list, err)
	case <-ctx.Done():
	}
	c.mu.Lock()
	last := c.lastErr
	c.mu.Unlock()
	c.Close()
	if last != nil {
		return nil, fmt.Errorf("client: connecting to %v: %w (last error: %v)", list, ctx.Err(), last)
	}
	return nil, fmt.Errorf("client: connecting to %v: %w", list, ctx.Err())
}

// SessionID returns the session's id.
func (c *Conn) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// SessionTimeout returns the timeout the server granted.
func (c *Conn) SessionTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timeout
}

// State returns the session's current state.
func (c *Conn) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Server returns the address of the server the Conn is connected to, or ""
// while it is disconnected.
func (c *Conn) Server() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return ""
	}
	return c.server
}

// LastZxid returns the largest zxid seen in a reply: what the client sends
// on reconnection so that it never sees older state.
func (c *Conn) LastZxid() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastZxid
}

// SessionEvents returns the channel of session state changes, in order.
// Events queue without bound until read; the channel is closed after the
// final state (Expired, AuthFailed or Closed), and at once by Close.
func (c *Conn) SessionEvents() <-chan SessionEvent { return c.events.out }

// submit queues a call. If the session is over, the call completes at once
// with the terminal error: every earlier call has completed by then, so
// FIFO order holds.
func (c *Conn) submit(cl *call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.submitLocked(cl)
}

func (c *Conn) submitLocked(cl *call) {
	switch {
	case c.terminal != nil:
		cl.finish(c.terminal)
		cl.complete()
		return
	case c.closing:
		cl.finish(ErrClosed)
	case len(cl.frame)-4 > c.cfg.maxPacket:
		cl.finish(ErrRequestTooLarge)
	}
	if cl.ready && len(c.pending) == 0 && len(c.outbox) == 0 {
		cl.complete()
		return
	}
	c.outbox = append(c.outbox, cl)
	if c.cur != nil {
		c.cur.kickWriter()
	}
}

// flushReadyLocked completes the calls at the head of the FIFO whose
// results are known. A call's result may be known before an earlier
// call's (an auth reply overtakes, a request refused locally), but it is
// published only after every earlier call's.
func (c *Conn) flushReadyLocked() {
	n := 0
	for n < len(c.pending) && c.pending[n].ready {
		c.pending[n].complete()
		c.pending[n] = nil
		n++
	}
	c.pending = c.pending[n:]
	if len(c.pending) == 0 {
		c.pending = nil
	}
}

// failAllLocked completes every queued call with err, in FIFO order.
func (c *Conn) failAllLocked(err error) {
	for _, q := range [][]*call{c.pending, c.outbox} {
		for _, cl := range q {
			cl.finish(err)
			cl.complete()
		}
	}
	c.pending, c.outbox = nil, nil
}

// setStateLocked records a state change and reports it.
func (c *Conn) setStateLocked(s State) {
	if c.state == s {
		return
	}
	c.state = s
	ev := SessionEvent{State: s, SessionID: c.sessionID}
	if s == StateConnected || s == StateConnectedReadOnly {
		ev.Server = c.server
	}
	c.events.push(ev)
	if s.Final() {
		c.events.finish()
	}
}

// terminateLocked ends the session for good: every queued call fails with
// err, every watch gets a final event, and the session loop is told to
// stop. Only the first terminal state counts, except that Close after
// expiry makes further calls fail with ErrClosed.
func (c *Conn) terminateLocked(s State, err error) {
	if c.terminal != nil {
		if s == StateClosed {
			c.terminal = ErrClosed
		}
		return
	}
	c.terminal = err
	c.failAllLocked(err)
	c.watches.endAll(s, err)
	c.setStateLocked(s)
	if c.cur != nil {
		c.cur.fail(err)
	}
	c.quitOnce.Do(func() { close(c.quit) })
}

// Close ends the session: it sends closeSession (when connected) and waits
// for its reply for at most a third of the session timeout, then stops every
// goroutine of the Conn. Calls still queued fail with ErrClosed; watches
// get a final event with State Closed; channels returned by the Conn are
// closed. Close is idempotent and returns nil.
func (c *Conn) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true

	c.mu.Lock()
	var bye *call
	if c.terminal == nil && c.cur != nil {
		bye = newCall(zkproto.OpCloseSession, nil, nil)
		c.submitLocked(bye)
	}
	c.closing = true
	wait := c.timeout / 3
	c.mu.Unlock()
	if bye != nil {
		t := time.NewTimer(wait)
		select {
		case <-bye.done:
		case <-t.C:
		}
		t.Stop()
	}

	c.mu.Lock()
	c.terminateLocked(StateClosed, ErrClosed)
	c.mu.Unlock()
	c.quitOnce.Do(func() { close(c.quit) })
	c.loopWG.Wait()
	close(c.abort)
	c.pumpWG.Wait()
	return nil
}
