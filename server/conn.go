package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/internal/watch"
	"github.com/giraffe-coord/giraffe/zkproto"
)

const (
	// maxInflight bounds the requests of one connection that are waiting in
	// the pipeline; the reader stops reading beyond it (back-pressure).
	maxInflight = 1024
	// maxOutbox bounds the bytes queued for a client that does not read its
	// replies; past it the connection is closed.
	maxOutbox = 64 << 20
	// handshakeTimeout bounds how long a new connection may take to send
	// its ConnectRequest.
	handshakeTimeout = 10 * time.Second
)

// conn is one client connection.
type conn struct {
	s  *Server
	nc net.Conn
	id watch.WatcherID
	ip string
	br *bufio.Reader

	// slots holds one token per request in the pipeline; len(slots) == 0
	// means every earlier request of this connection has been applied (a
	// weak write answered early keeps its token until then, so that a read
	// behind it sees it).
	slots chan struct{}
	// order keeps the replies in request order (replyorder.go).
	order replyOrder

	session   atomic.Int64
	timeout   time.Duration
	oldClient bool // its ConnectRequest had no readOnly byte

	mu          sync.Mutex
	out         []byte // frames queued for the writer
	spare       []byte // the writer's previous buffer, reused
	ids         []zkproto.Id
	closed      bool
	closeOnSent bool // close once out is written (after AUTHFAILED, closeSession)
	// writing is set while one goroutine writes to the socket: the
	// writer, or the reader flushing a reply it made inline (flushInline).
	writing bool
	// inline is set while the reader answers a request inline (ordered):
	// it sends what it queued itself, so enqueue wakes no writer then.
	inline bool
	wake   chan struct{}
	done   chan struct{}

	received atomic.Int64
	sent     atomic.Int64
	since    time.Time
}

func newConn(s *Server, nc net.Conn, id watch.WatcherID, ip string) *conn {
	return &conn{
		s:     s,
		nc:    nc,
		id:    id,
		ip:    ip,
		br:    bufio.NewReaderSize(nc, 64<<10),
		slots: make(chan struct{}, maxInflight),
		// ZooKeeper gives every connection the ip id of its address.
		ids:   []zkproto.Id{{Scheme: "ip", ID: ip}},
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		since: time.Now(),
	}
}

func (c *conn) start() {
	c.s.metrics.connections.Inc()
	go c.writeLoop()
	go c.readLoop()
}

func (c *conn) sessionID() int64 { return c.session.Load() }

// authIDs returns the connection's authenticated ids (a snapshot: auth
// replaces the slice, never mutates it).
func (c *conn) authIDs() []zkproto.Id {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids
}

// close shuts the connection down at once; the reader's exit then removes
// it from the server.
func (c *conn) close(reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.s.log.Debug("closing connection", "remote", c.nc.RemoteAddr().String(),
		"session", sessionHex(c.sessionID()), "reason", reason)
	close(c.done)
	closeNow(c.nc)
}

// closeAfterFlush closes the connection once everything queued is sent.
func (c *conn) closeAfterFlush() {
	c.mu.Lock()
	c.closeOnSent = true
	c.mu.Unlock()
	c.signal()
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// enqueue appends one frame, built by fn, to the outbox.
func (c *conn) enqueue(fn func([]byte) []byte) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.out = fn(c.out)
	over := len(c.out) > maxOutbox
	wake := !c.inline
	c.mu.Unlock()
	c.sent.Add(1)
	if over {
		c.s.log.Warn("client is not reading its replies; closing", "remote", c.nc.RemoteAddr().String(),
			"session", sessionHex(c.sessionID()), "queued_bytes", maxOutbox)
		c.close("outbox over limit")
		return
	}
	if wake {
		c.signal()
	}
}

// flushInline ends an inline answer: when the client has sent nothing more
// yet, the reader writes what is queued itself (unless a write is under
// way), instead of waking the writer. A ping or a read answered from the
// tree then costs no hand-off between goroutines; a write that blocks
// holds only this connection's reader, which reads no further requests
// from a client that takes no replies. Requests already buffered behind
// it leave the replies to the writer, which sends them together.
func (c *conn) flushInline() {
	c.mu.Lock()
	c.inline = false
	if c.writing || c.closed || c.closeOnSent || len(c.out) == 0 || c.br.Buffered() > 0 {
		pending := len(c.out) > 0 || c.closeOnSent
		c.mu.Unlock()
		if pending {
			c.signal()
		}
		return
	}
	c.writing = true
	buf := c.out
	c.out = c.spare[:0]
	c.mu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout()))
	_, err := c.nc.Write(buf)
	c.mu.Lock()
	c.writing = false
	c.spare = buf
	pending := len(c.out) > 0 || c.closeOnSent
	c.mu.Unlock()
	if err != nil {
		c.close("write failed")
		return
	}
	if pending {
		c.signal()
	}
}

// reply queues a reply frame; body is omitted when code is not OK.
func (c *conn) reply(xid zkproto.Xid, zxid int64, code zkproto.Code, body zkproto.Record) {
	c.enqueue(func(b []byte) []byte {
		return zkproto.EncodeReply(b, zkproto.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}, body)
	})
}

// sendEvent queues a watch notification.
func (c *conn) sendEvent(ev watch.Event) {
	c.enqueue(func(b []byte) []byte {
		return zkproto.EncodeReply(b, zkproto.ReplyHeader{Xid: zkproto.XidNotification, Zxid: ev.Zxid},
			&zkproto.WatcherEvent{Type: ev.Type, State: zkproto.StateSyncConnected, Path: ev.Path})
	})
}

// sendRaw queues a frame without a reply header (the ConnectResponse).
func (c *conn) sendRaw(rec zkproto.Record) {
	c.enqueue(func(b []byte) []byte { return zkproto.AppendFrame(b, rec) })
}

func (c *conn) writeLoop() {
	w := bufio.NewWriterSize(c.nc, 64<<10)
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		c.mu.Lock()
		if c.writing {
			// The reader is flushing an inline answer; it wakes this
			// loop again if more is queued when it is done.
			c.mu.Unlock()
			continue
		}
		c.writing = true
		buf := c.out
		c.out = c.spare[:0]
		closeNow := c.closeOnSent
		c.mu.Unlock()
		if len(buf) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout()))
			if _, err := w.Write(buf); err == nil {
				err = w.Flush()
			}
		}
		c.mu.Lock()
		c.writing = false
		c.spare = buf
		pending := len(c.out) > 0
		c.mu.Unlock()
		if w.Buffered() > 0 || (closeNow && !pending) {
			// A failed write leaves bytes buffered: the client is gone.
			c.close("write failed or close requested")
			return
		}
		if closeNow && pending {
			c.signal()
		}
	}
}

// writeTimeout bounds one flush: a client that cannot take its replies
// within its session timeout is treated as gone.
func (c *conn) writeTimeout() time.Duration {
	if c.timeout > 0 {
		return c.timeout
	}
	return handshakeTimeout
}

func (c *conn) readLoop() {
	reason := "client closed the connection"
	defer func() {
		c.close(reason)
		c.s.forget(c)
		c.s.metrics.connections.Dec()
	}()
	c.nc.SetReadDeadline(time.Now().Add(handshakeTimeout))
	if reason = c.tlsHandshake(); reason != "" {
		return
	}
	if head, err := c.br.Peek(4); err == nil {
		if word, ok := zkproto.FourLetterWord([4]byte(head)); ok {
			c.br.Discard(4)
			c.fourLetter(word)
			reason = "four-letter word answered"
			return
		}
	}
	var buf []byte
	frame, err := zkproto.ReadFrame(c.br, buf, c.s.cfg.MaxPacket)
	if err != nil {
		reason = c.readError("connect request", err)
		return
	}
	if reason = c.handshake(frame); reason != "" {
		return
	}
	buf = frame
	for {
		c.nc.SetReadDeadline(time.Now().Add(c.timeout))
		frame, err = zkproto.ReadFrame(c.br, buf, c.s.cfg.MaxPacket)
		if err != nil {
			reason = c.readError("request", err)
			return
		}
		buf = frame
		if ok, why := c.s.servingFor(0); !ok {
			reason = "server not serving: " + why
			return
		}
		c.received.Add(1)
		c.s.sessions.Touch(c.sessionID(), time.Now())
		if reason = c.handle(frame); reason != "" {
			return
		}
	}
}

// readError turns a read failure into a close reason, logging the ones
// that mean the client sent something wrong.
func (c *conn) readError(what string, err error) string {
	var tooBig *zkproto.FrameTooLargeError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return "client closed the connection"
	case errors.As(err, &tooBig):
		c.s.log.Warn("closing connection: frame exceeds the maximum packet size",
			"remote", c.nc.RemoteAddr().String(), "session", sessionHex(c.sessionID()),
			"len", tooBig.Len, "max", tooBig.Max)
		c.s.metrics.badInput.Inc()
		return "frame too large"
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.s.log.Warn("closing connection: truncated "+what, "remote", c.nc.RemoteAddr().String(),
			"session", sessionHex(c.sessionID()))
		return "truncated frame"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.s.log.Info("closing connection: client silent past its timeout",
			"remote", c.nc.RemoteAddr().String(), "session", sessionHex(c.sessionID()))
		return "read timeout"
	}
	return fmt.Sprintf("read %s: %v", what, err)
}

// handshake answers the ConnectRequest; it returns a close reason, or "" to
// go on serving.
func (c *conn) handshake(frame []byte) string {
	s := c.s
	var req zkproto.ConnectRequest
	if err := req.Decode(zkproto.NewDecoder(frame)); err != nil {
		s.log.Warn("closing connection: malformed connect request", "remote", c.nc.RemoteAddr().String(), "err", err)
		s.metrics.badInput.Inc()
		return "malformed connect request"
	}
	c.oldClient = !req.HasReadOnly
	lo, hi := s.cfg.sessionBounds()
	timeout := min(max(time.Duration(req.TimeOut)*time.Millisecond, lo), hi)
	if ok, why := s.servingFor(timeout); !ok {
		// As ZooKeeper's server when it is not running: the connection
		// closes unanswered and the client tries another server.
		s.log.Info("refusing client: not serving", "remote", c.nc.RemoteAddr().String(), "why", why)
		return "not serving"
	}
	last := s.waitApplied(req.LastZxidSeen)
	if req.LastZxidSeen > last {
		s.log.Info("refusing client that has seen a newer zxid; it must try another server",
			"remote", c.nc.RemoteAddr().String(), "client_zxid", fmt.Sprintf("0x%x", req.LastZxidSeen),
			"server_zxid", fmt.Sprintf("0x%x", last))
		return "client ahead of server"
	}
	c.timeout = timeout
	if req.SessionID == 0 {
		return c.createSession(timeout)
	}
	if s.lostZxid(req.LastZxidSeen) {
		return c.endLostSession(req.SessionID, req.LastZxidSeen)
	}
	si, ok := c.lookupSession(req.SessionID)
	if !ok || !bytes.Equal(si.Passwd, req.Passwd) || !s.sessions.Touch(req.SessionID, time.Now()) {
		return c.refuseExpired(req.SessionID)
	}
	start := time.Now()
	switch code := c.claimSession(req.SessionID); code {
	case zkproto.OK:
	case zkproto.ErrSessionExpired:
		return c.refuseExpired(req.SessionID)
	default:
		s.log.Info("reconnect failed: could not move the session here", "remote", c.nc.RemoteAddr().String(),
			"session", sessionHex(req.SessionID), "err", code)
		return "moving the session here failed: " + code.String()
	}
	if late := s.lateHandshake(start, min(timeout, time.Duration(si.Timeout)*time.Millisecond)); late != "" {
		return late
	}
	c.session.Store(req.SessionID)
	s.attachSession(c, req.SessionID)
	c.sendRaw(&zkproto.ConnectResponse{TimeOut: int32(timeout / time.Millisecond), SessionID: req.SessionID,
		Passwd: si.Passwd, HasReadOnly: !c.oldClient})
	return ""
}

// lookupSession finds session id for a reconnecting client. A session this
// server does not know may have been created through another server whose
// entry it has not applied yet (the client's last zxid does not say: a
// client whose only request was its handshake has seen none), so an
// ensemble member orders a sync through the log first and looks again once
// it has applied everything committed before the client reconnected:
// SESSION_EXPIRED, which the client takes as final, is decided by the log,
// not by how far behind this server is.
func (c *conn) lookupSession(id int64) (datatree.SessionInfo, bool) {
	s := c.s
	s.treeMu.RLock()
	si, ok := s.tree.Session(id)
	s.treeMu.RUnlock()
	if ok {
		return si, true
	}
	if _, replicated := s.pipe.(*replicated); !replicated {
		return si, false
	}
	synced := make(chan struct{})
	if !s.pipe.submit(&proposal{sync: true, conn: c, applied: func(txn.Result, *txn.Entry) { close(synced) }}) {
		return si, false
	}
	select {
	case <-synced:
	case <-c.done:
		return si, false
	}
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	return s.tree.Session(id)
}

// refuseExpired tells a client reconnecting to an expired or unknown
// session so, the way ZooKeeper does (a zero session in the answer), and
// ends the connection.
func (c *conn) refuseExpired(id int64) string {
	c.s.log.Info("reconnect to an expired or unknown session", "remote", c.nc.RemoteAddr().String(),
		"session", sessionHex(id))
	c.sendRaw(&zkproto.ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: !c.oldClient})
	c.closeAfterFlush()
	<-c.done
	return "session expired"
}

// createSession orders a new session through the log and answers the
// handshake once it is applied.
func (c *conn) createSession(timeout time.Duration) string {
	s := c.s
	id, passwd := s.sessions.NewSession()
	e := &txn.Entry{Session: id, Timeout: int32(timeout / time.Millisecond), Passwd: passwd,
		Op: txn.Op{Kind: txn.KindCreateSession}}
	result := make(chan zkproto.Code, 1)
	start := time.Now()
	late := ""
	ok := s.pipe.submit(&proposal{entry: e, conn: c, applied: func(res txn.Result, e *txn.Entry) {
		if res.Err == zkproto.OK {
			s.sessions.Add(id, timeout, time.Now())
			if late = s.lateHandshake(start, timeout); late != "" {
				result <- res.Err
				return
			}
			c.session.Store(id)
			s.attachSession(c, id)
			c.sendRaw(&zkproto.ConnectResponse{TimeOut: e.Timeout, SessionID: id, Passwd: passwd,
				HasReadOnly: !c.oldClient})
		}
		result <- res.Err
	}})
	if !ok {
		return "server shutting down"
	}
	select {
	case code := <-result:
		if code != zkproto.OK {
			return "session creation failed: " + code.String()
		}
		if late != "" {
			return late
		}
		s.metrics.sessionsCreated.Inc()
		return ""
	case <-c.done:
		return "closed during handshake"
	}
}

// ordered runs fn after every request this connection sent before it has
// been answered, with the tree locked: inline under the shared lock when
// nothing is in flight, otherwise behind the in-flight requests in the
// pipeline (where the applier holds the lock exclusively).
func (c *conn) ordered(fn func()) bool {
	if len(c.slots) == 0 {
		c.mu.Lock()
		c.inline = true
		c.mu.Unlock()
		c.s.treeMu.RLock()
		fn()
		c.s.treeMu.RUnlock()
		c.flushInline()
		return true
	}
	return c.enqueueProposal(&proposal{applied: func(txn.Result, *txn.Entry) { fn() }})
}

// enqueueProposal takes a slot and submits pr; the slot is released after
// pr's callback ran.
func (c *conn) enqueueProposal(pr *proposal) bool {
	select {
	case c.slots <- struct{}{}:
	case <-c.done:
		return false
	}
	pr.conn = c
	inner := pr.applied
	pr.applied = func(res txn.Result, e *txn.Entry) {
		c.order.complete(pr, func() {
			if inner != nil {
				inner(res, e)
			}
		})
		<-c.slots
	}
	c.order.add(pr)
	return c.s.pipe.submit(pr)
}

// auth handles an AuthPacket. The Java client sends it with xid -4, other
// clients with an ordinary xid; as ZooKeeper does, the reply echoes it.
func (c *conn) auth(xid zkproto.Xid, ap *zkproto.AuthPacket) string {
	if ap.Scheme == "x509" {
		c.authX509(xid)
		return ""
	}
	id, err := acl.Authenticate(ap.Scheme, ap.Auth, c.ip)
	if err != nil {
		c.s.log.Info("authentication failed", "remote", c.nc.RemoteAddr().String(), "scheme", ap.Scheme, "err", err)
		c.reply(xid, 0, zkproto.ErrAuthFailed, nil)
		c.closeAfterFlush()
		return ""
	}
	c.mu.Lock()
	ids := addID(c.ids, id)
	if id.Scheme == "digest" && c.s.cfg.SuperDigest != "" && id.ID == c.s.cfg.SuperDigest {
		ids = addID(ids, acl.SuperID)
	}
	c.ids = ids
	c.mu.Unlock()
	c.reply(xid, 0, zkproto.OK, nil)
	return ""
}

// addID returns ids plus id in a new slice, unless ids already holds it
// (ServerCnxn.addAuthInfo skips duplicates, so that an auth ACL does not
// expand to the same id twice).
func addID(ids []zkproto.Id, id zkproto.Id) []zkproto.Id {
	for _, x := range ids {
		if x == id {
			return ids
		}
	}
	return append(append(make([]zkproto.Id, 0, len(ids)+1), ids...), id)
}

// sessionHex formats a session id the way ZooKeeper logs it.
func sessionHex(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }
