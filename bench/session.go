// Package bench is Giraffe's load generator. It speaks the ZooKeeper wire
// protocol itself (pipelined, many requests outstanding per session), so the
// same run measures Giraffe and Apache ZooKeeper alike.
package bench

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// session is one pipelined client connection. Replies arrive in request
// order (ZooKeeper's guarantee), so the reader matches each reply with the
// oldest pending request.
type session struct {
	nc   net.Conn
	bw   *bufio.Writer
	br   *bufio.Reader
	wmu  sync.Mutex
	xid  zkproto.Xid
	buf  []byte
	pend chan pending
	// maxPacket bounds replies read from the server.
	maxPacket int
	// timeout is the negotiated session timeout; id and passwd are what
	// a reconnect presents to resume the session elsewhere.
	timeout time.Duration
	id      int64
	passwd  []byte
	// lastZxid is the largest zxid of a reply to a request, which a
	// reconnect presents: a server that has seen less refuses it, as
	// ZooKeeper's does, so that the client never goes back in time.
	lastZxid atomic.Int64
	readOnce sync.Once
	readErr  chan error
	// readDone is closed once the reader has stopped, before readErr gets
	// its error, whoever receives that; stopErr is the error, to read
	// after readDone.
	readDone chan struct{}
	stopErr  error
}

// pending is a request waiting for its reply.
type pending struct {
	xid  zkproto.Xid
	sent time.Time
	done func(code zkproto.Code, body []byte, sent time.Time)
}

// dial connects and completes the handshake of a new session.
func dial(addr string, timeout time.Duration, outstanding int) (*session, error) {
	return redial(addr, nil, timeout, outstanding, time.Now().Add(10*time.Second))
}

// redial connects to addr and completes the handshake that resumes old's
// session, or that opens a new one when old is nil, by deadline. A server
// that no longer knows old's session answers errSessionExpired.
func redial(addr string, old *session, timeout time.Duration, outstanding int, deadline time.Time) (*session, error) {
	nc, err := (&net.Dialer{Deadline: deadline}).Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &session{nc: nc, bw: bufio.NewWriterSize(nc, 64<<10), br: bufio.NewReaderSize(nc, 64<<10),
		pend: make(chan pending, outstanding+16), maxPacket: 16 << 20, readDone: make(chan struct{})}
	req := &zkproto.ConnectRequest{TimeOut: int32(timeout / time.Millisecond), Passwd: make([]byte, 16), HasReadOnly: true}
	if old != nil {
		req.SessionID, req.Passwd, req.LastZxidSeen = old.id, old.passwd, old.lastZxid.Load()
		s.lastZxid.Store(req.LastZxidSeen)
	}
	resp, err := handshake(nc, s.br, req, deadline)
	if err != nil {
		nc.Close()
		return nil, err
	}
	s.timeout = time.Duration(resp.TimeOut) * time.Millisecond
	s.id, s.passwd = resp.SessionID, resp.Passwd
	return s, nil
}

// handshake sends req on nc and reads the server's answer from br, by
// deadline. A connection closed unanswered (a server that is not serving,
// or that has seen less than req's LastZxidSeen) fails with the read's
// error, a resumed session the server does not know with
// errSessionExpired. It leaves nc without a deadline.
func handshake(nc net.Conn, br *bufio.Reader, req *zkproto.ConnectRequest, deadline time.Time) (*zkproto.ConnectResponse, error) {
	nc.SetDeadline(deadline)
	if _, err := nc.Write(zkproto.AppendFrame(nil, req)); err != nil {
		return nil, err
	}
	frame, err := zkproto.ReadFrame(br, nil, liveMaxFrame)
	if err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	var resp zkproto.ConnectResponse
	if err := resp.Decode(zkproto.NewDecoder(frame)); err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	if resp.TimeOut <= 0 {
		if req.SessionID != 0 {
			return nil, fmt.Errorf("session 0x%x: %w", req.SessionID, errSessionExpired)
		}
		return nil, errors.New("handshake refused: no session")
	}
	nc.SetDeadline(time.Time{})
	return &resp, nil
}

// keepAlive pings the server every third of the session's timeout, for
// a session that may sit idle longer than its timeout, until the
// returned func is called. The replies (xid -2) are skipped by the
// reader.
func (s *session) keepAlive() (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(s.timeout / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			s.wmu.Lock()
			_, err := s.bw.Write(pingFrame)
			if err == nil {
				err = s.bw.Flush()
			}
			s.wmu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return func() { close(done) }
}

// send queues one request; done runs in the reader goroutine with the reply.
// It does not flush; call flush after a burst.
func (s *session) send(op zkproto.OpCode, body zkproto.Record, done func(zkproto.Code, []byte, time.Time)) error {
	return s.sendAt(op, body, time.Now(), done)
}

// sendAt is send with the time the request counts from: done receives it.
func (s *session) sendAt(op zkproto.OpCode, body zkproto.Record, at time.Time, done func(zkproto.Code, []byte, time.Time)) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.xid++
	if s.xid <= 0 {
		s.xid = 1
	}
	s.buf = zkproto.EncodeRequest(s.buf[:0], zkproto.RequestHeader{Xid: s.xid, Op: op}, body)
	s.pend <- pending{xid: s.xid, sent: at, done: done}
	_, err := s.bw.Write(s.buf)
	return err
}

// flush writes buffered requests to the socket.
func (s *session) flush() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.bw.Flush()
}

// reader starts the session's reply reader (once) and returns the channel
// that gets its error when the connection fails.
func (s *session) reader() <-chan error {
	s.readOnce.Do(func() {
		s.readErr = make(chan error, 1)
		go func() {
			err := s.readLoop()
			s.stopErr = err
			close(s.readDone)
			s.readErr <- err
		}()
	})
	return s.readErr
}

// lost reports whether the connection has failed (its reader stopped).
func (s *session) lost() bool {
	select {
	case <-s.readDone:
		return true
	default:
		return false
	}
}

// shut closes the connection and waits for the reader to stop, leaving
// the requests still pending unanswered: the run is over.
func (s *session) shut() {
	s.nc.Close()
	s.reader()
	<-s.readDone
}

// fail closes the connection, waits for the reader to stop and fails
// every request still pending with ErrConnectionLoss, as a ZooKeeper
// client does: their callbacks decide what the loss counts as.
func (s *session) fail() {
	s.shut()
	for {
		select {
		case p := <-s.pend:
			p.done(zkproto.ErrConnectionLoss, nil, p.sent)
		default:
			return
		}
	}
}

// readLoop reads replies until the connection fails, dispatching each to
// its pending request. Notifications and pings are skipped.
func (s *session) readLoop() error {
	var buf []byte
	for {
		frame, err := zkproto.ReadFrame(s.br, buf, s.maxPacket)
		if err != nil {
			return err
		}
		buf = frame
		d := zkproto.NewDecoder(frame)
		var h zkproto.ReplyHeader
		if err := h.Decode(d); err != nil {
			return err
		}
		if h.Xid < 0 {
			continue
		}
		if h.Zxid > s.lastZxid.Load() {
			s.lastZxid.Store(h.Zxid)
		}
		p := <-s.pend
		if p.xid != h.Xid {
			return fmt.Errorf("reply out of order: got xid %d, expected %d", h.Xid, p.xid)
		}
		p.done(h.Err, frame[16:], p.sent)
	}
}

func (s *session) close() { s.nc.Close() }
