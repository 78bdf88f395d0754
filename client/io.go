package client

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// netConn is one TCP connection of the session, from a successful
// handshake until it breaks.
type netConn struct {
	nc net.Conn
	br *bufio.Reader
	// readTimeout: a connection silent this long is dead (2/3 of the
	// session timeout); pingEvery: the writer pings after this long without
	// sending (1/3), so a live server always answers in time.
	readTimeout time.Duration
	pingEvery   time.Duration

	kick     chan struct{}
	dead     chan struct{}
	deadOnce sync.Once
	err      error // why it died; written once, before dead is closed
	wg       sync.WaitGroup
}

func newNetConn(nc net.Conn, br *bufio.Reader, timeout time.Duration) *netConn {
	return &netConn{
		nc:          nc,
		br:          br,
		readTimeout: timeout * 2 / 3,
		pingEvery:   timeout / 3,
		kick:        make(chan struct{}, 1),
		dead:        make(chan struct{}),
	}
}

// fail closes the connection; the first reason is kept.
func (n *netConn) fail(err error) {
	n.deadOnce.Do(func() {
		n.err = err
		close(n.dead)
		n.nc.Close()
	})
}

// kickWriter wakes the writer; a pending wake-up is enough.
func (n *netConn) kickWriter() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// pingFrame is the whole ping request: header only, xid -2.
var pingFrame = zkproto.EncodeRequest(nil, zkproto.RequestHeader{Xid: zkproto.XidPing, Op: zkproto.OpPing}, nil)

// writeLoop moves queued requests to the pending list, assigning xids in
// that order, and writes them in batches (one write for everything queued
// since the last, which is what pipelining costs); it pings when idle.
func (c *Conn) writeLoop(n *netConn) {
	defer n.wg.Done()
	timer := time.NewTimer(n.pingEvery)
	defer timer.Stop()
	var buf []byte
	for {
		buf = buf[:0]
		c.mu.Lock()
		if c.cur != n {
			c.mu.Unlock()
			return
		}
		for i, cl := range c.outbox {
			c.pending = append(c.pending, cl)
			c.outbox[i] = nil
			if cl.ready {
				continue // refused locally; completes in its turn
			}
			if cl.xid == 0 {
				c.nextXid++
				if c.nextXid <= 0 { // wraps to 1, as ClientCnxn's xid does
					c.nextXid = 1
				}
				cl.setXid(c.nextXid)
			}
			buf = append(buf, cl.frame...)
			cl.frame = nil
		}
		c.outbox = c.outbox[:0]
		c.flushReadyLocked()
		c.mu.Unlock()

		if len(buf) > 0 {
			n.nc.SetWriteDeadline(time.Now().Add(n.readTimeout))
			if _, err := n.nc.Write(buf); err != nil {
				n.fail(err)
				return
			}
			timer.Reset(n.pingEvery)
			if cap(buf) > 1<<20 {
				buf = nil // do not pin a large batch's memory
			}
			continue
		}
		select {
		case <-n.kick:
		case <-timer.C:
			n.nc.SetWriteDeadline(time.Now().Add(n.readTimeout))
			if _, err := n.nc.Write(pingFrame); err != nil {
				n.fail(err)
				return
			}
			timer.Reset(n.pingEvery)
		case <-n.dead:
			return
		}
	}
}

// readLoop reads frames until the connection breaks or falls silent for
// readTimeout.
func (c *Conn) readLoop(n *netConn) {
	defer n.wg.Done()
	var buf []byte
	for {
		n.nc.SetReadDeadline(time.Now().Add(n.readTimeout))
		frame, err := zkproto.ReadFrame(n.br, buf, maxReplyBytes)
		if err != nil {
			n.fail(err)
			return
		}
		if cap(frame) <= 1<<20 {
			buf = frame[:0] // records copy what they keep, so reuse is safe
		}
		if err := c.handleFrame(n, frame); err != nil {
			c.log.Warn("dropping connection", "err", err)
			n.fail(err)
			return
		}
	}
}

// handleFrame dispatches one reply or notification.
func (c *Conn) handleFrame(n *netConn, frame []byte) error {
	d := zkproto.NewDecoder(frame)
	var h zkproto.ReplyHeader
	if err := h.Decode(d); err != nil {
		return errProtocol("truncated reply header")
	}
	switch h.Xid {
	case zkproto.XidNotification:
		var ev zkproto.WatcherEvent
		if err := ev.Decode(d); err != nil {
			return errProtocol("malformed notification")
		}
		c.mu.Lock()
		if c.cur == n {
			c.watches.trigger(ev, h.Zxid)
		}
		c.mu.Unlock()
		return nil
	case zkproto.XidPing:
		return nil
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != n {
		return errProtocol("reply on a retired connection")
	}
	authFailed := h.Xid == zkproto.XidAuth && h.Err == zkproto.ErrAuthFailed
	cl := c.matchLocked(h.Xid)
	switch {
	case cl == nil && h.Xid > 0:
		return errProtocol(fmt.Sprintf("reply xid %d matches no request", h.Xid))
	case cl != nil && cl.xid != h.Xid:
		// Replies come in request order; anything else means the stream
		// is not what we think it is (ClientCnxn: "Xid out of order").
		return errProtocol(fmt.Sprintf("reply xid %d, expected %d", h.Xid, cl.xid))
	case cl != nil:
		// Only a reply that fits the stream moves lastZxid, which the
		// next handshake sends as the state the client has seen.
		if h.Zxid > c.lastZxid {
			c.lastZxid = h.Zxid
		}
		code := h.Err
		if code == zkproto.OK && cl.resp != nil {
			if err := cl.resp.Decode(d); err != nil {
				code = zkproto.ErrMarshallingError
			}
		}
		if cl.onReply != nil {
			cl.onReply(code)
		}
		var err error
		if code != zkproto.OK {
			err = code
		}
		cl.finish(err)
		c.flushReadyLocked()
	}
	if authFailed {
		// The server closes the connection after this reply; the session
		// is unusable, as in ZooKeeper, where AUTH_FAILED is final.
		c.terminateLocked(StateAuthFailed, zkproto.ErrAuthFailed)
	}
	return nil
}

// matchLocked finds the request a reply answers: the oldest unanswered
// request with the same special xid (auth and setWatches replies may
// overtake ordinary ones: ZooKeeper answers auth as soon as it reads it),
// or the oldest unanswered ordinary request.
func (c *Conn) matchLocked(xid zkproto.Xid) *call {
	for _, cl := range c.pending {
		if cl.ready {
			continue
		}
		if xid < 0 {
			if cl.xid == xid {
				return cl
			}
			continue
		}
		if cl.xid > 0 {
			return cl
		}
	}
	return nil
}
