package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// errExpired is what handshake returns when the server no longer knows the
// session (a ConnectResponse with timeOut 0).
var errExpired = errors.New("client: session expired")

// Reconnection backoff: after every server of the list has failed once in
// a row, the loop waits before the next round, doubling from backoffMin to
// backoffMax, so that a dead ensemble is not hammered.
const (
	backoffMin = 20 * time.Millisecond
	backoffMax = time.Second
	// minConnectTimeout is the floor of the per-server dial and handshake
	// deadline, which is otherwise sessionTimeout/len(servers) as in
	// ZooKeeper's ClientCnxn.
	minConnectTimeout = 250 * time.Millisecond
)

// run is the session loop: connect to the next server, serve the
// connection until it breaks, and start again, until the session ends.
func (c *Conn) run() {
	defer c.loopWG.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.quit
		cancel()
	}()
	next, failures := 0, 0
	for ctx.Err() == nil {
		addr := c.servers[next%len(c.servers)]
		next++
		n, resp, err := c.handshake(ctx, addr)
		if errors.Is(err, errExpired) {
			c.log.Warn("session expired", "server", addr, "session", fmt.Sprintf("0x%x", uint64(c.SessionID())))
			c.mu.Lock()
			c.terminateLocked(StateExpired, zkproto.ErrSessionExpired)
			c.mu.Unlock()
			return
		}
		if err != nil {
			c.log.Info("connection attempt failed", "server", addr, "err", err)
			c.mu.Lock()
			c.lastErr = err
			c.mu.Unlock()
			failures++
			if failures%len(c.servers) == 0 && !c.sleep(ctx, failures/len(c.servers)) {
				return
			}
			continue
		}
		failures = 0
		if !c.activate(n, addr, resp) {
			n.fail(ErrClosed)
			return
		}
		select {
		case <-n.dead:
		case <-ctx.Done():
			n.fail(ErrClosed)
		}
		n.wg.Wait()
		if !c.connLost(n) {
			return
		}
	}
}

// sleep waits for the backoff of the given round of failures; false if the
// session ended meanwhile.
func (c *Conn) sleep(ctx context.Context, round int) bool {
	d := backoffMin << min(round-1, 10)
	if d > backoffMax || d <= 0 {
		d = backoffMax
	}
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// connectTimeout bounds the dial and handshake with one server.
func (c *Conn) connectTimeout() time.Duration {
	return max(c.cfg.sessionTimeout/time.Duration(len(c.servers)), minConnectTimeout)
}

// handshake dials addr and exchanges ConnectRequest and ConnectResponse.
// The request carries the readOnly byte, as 3.9 clients always send it;
// the response is accepted with or without it (older servers omit it).
func (c *Conn) handshake(ctx context.Context, addr string) (*netConn, *zkproto.ConnectResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.connectTimeout())
	defer cancel()
	nc, err := c.cfg.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	// Unblock the reads and writes below when ctx ends (timeout or Close).
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	c.mu.Lock()
	sessionID := c.sessionID
	req := &zkproto.ConnectRequest{
		LastZxidSeen: c.lastZxid,
		TimeOut:      int32(c.cfg.sessionTimeout / time.Millisecond),
		SessionID:    sessionID,
		Passwd:       c.passwd,
		ReadOnly:     c.cfg.canBeReadOnly,
		HasReadOnly:  true,
	}
	c.mu.Unlock()

	fail := func(err error) (*netConn, *zkproto.ConnectResponse, error) {
		nc.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, nil, err
	}
	if _, err := nc.Write(zkproto.AppendFrame(nil, req)); err != nil {
		return fail(err)
	}
	br := bufio.NewReader(nc)
	frame, err := zkproto.ReadFrame(br, nil, maxReplyBytes)
	if err != nil {
		return fail(fmt.Errorf("reading ConnectResponse: %w", err))
	}
	var resp zkproto.ConnectResponse
	if err := resp.Decode(zkproto.NewDecoder(frame)); err != nil {
		return fail(fmt.Errorf("decoding ConnectResponse: %w", err))
	}
	if resp.TimeOut <= 0 || (sessionID != 0 && resp.SessionID != sessionID) {
		nc.Close()
		if sessionID == 0 {
			return nil, nil, errors.New("server refused to create a session")
		}
		return nil, nil, errExpired
	}
	if !stop() {
		return fail(ctx.Err())
	}
	nc.SetDeadline(time.Time{})
	return newNetConn(nc, br, time.Duration(resp.TimeOut)*time.Millisecond), &resp, nil
}

// activate makes n the current connection: it records the session, primes
// the connection with the credentials and the watches to restore (before
// any queued request, as ClientCnxn.primeConnection does), and starts the
// reader and the writer. It returns false if the Conn is closing.
func (c *Conn) activate(n *netConn, addr string, resp *zkproto.ConnectResponse) bool {
	c.mu.Lock()
	if c.closing || c.terminal != nil {
		c.mu.Unlock()
		return false
	}
	c.sessionID = resp.SessionID
	if len(resp.Passwd) > 0 {
		c.passwd = resp.Passwd
	}
	c.timeout = time.Duration(resp.TimeOut) * time.Millisecond
	c.cur, c.server = n, addr

	var prime []byte
	for _, a := range c.auths {
		cl := authCall(a)
		cl.internal = true
		c.pending = append(c.pending, cl)
		prime = append(prime, cl.frame...)
	}
	for _, cl := range c.watches.setWatchesCalls(c.lastZxid) {
		c.pending = append(c.pending, cl)
		prime = append(prime, cl.frame...)
	}
	state := StateConnected
	if resp.ReadOnly {
		state = StateConnectedReadOnly
	}
	c.setStateLocked(state)
	select {
	case <-c.connected:
	default:
		close(c.connected)
	}
	c.log.Info("connected", "server", addr, "session", fmt.Sprintf("0x%x", uint64(c.sessionID)),
		"timeout", c.timeout, "readOnly", resp.ReadOnly)
	c.mu.Unlock()

	if len(prime) > 0 {
		n.nc.SetWriteDeadline(time.Now().Add(n.readTimeout))
		if _, err := n.nc.Write(prime); err != nil {
			n.fail(err)
		}
	}
	n.wg.Add(2)
	go c.readLoop(n)
	go c.writeLoop(n)
	return true
}

// connLost retires a broken connection: its requests fail with connection
// loss (never retried, their outcome being unknown) and the session is
// Disconnected. It returns whether the loop should reconnect.
func (c *Conn) connLost(n *netConn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == n {
		c.cur, c.server = nil, ""
	}
	if c.terminal != nil {
		return false
	}
	c.failAllLocked(zkproto.ErrConnectionLoss)
	if c.closing {
		return false
	}
	c.log.Info("disconnected", "err", n.err)
	c.setStateLocked(StateDisconnected)
	return true
}
