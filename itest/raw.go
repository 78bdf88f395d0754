package itest

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// Raw is a minimal synchronous ZooKeeper protocol client for tests that need
// opcodes or byte sequences the real client libraries do not send. It
// records every watch notification it receives.
type Raw struct {
	NC        net.Conn // the connection, for tests that write bytes of their own
	SessionID int64    // as the handshake's reply gave it
	Passwd    []byte   // as the handshake's reply gave it
	Timeout   int32    // negotiated session timeout, ms
	LastZxid  int64    // zxid of the latest reply that carried one

	br  *bufio.Reader
	xid zkproto.Xid

	mu     sync.Mutex
	events []zkproto.WatcherEvent
}

// DialRaw connects and opens a new session (or resumes sessionID/passwd).
func DialRaw(addr string, timeoutMs int32, sessionID int64, passwd []byte) (*Raw, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	r := &Raw{NC: nc, br: bufio.NewReader(nc)}
	req := &zkproto.ConnectRequest{TimeOut: timeoutMs, SessionID: sessionID, Passwd: passwd, HasReadOnly: true}
	if err := r.WriteFrame(func(e *zkproto.Encoder) { req.Encode(e) }); err != nil {
		nc.Close()
		return nil, err
	}
	frame, err := r.ReadFrame()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("handshake: %w", err)
	}
	var resp zkproto.ConnectResponse
	if err := resp.Decode(zkproto.NewDecoder(frame)); err != nil {
		nc.Close()
		return nil, err
	}
	r.SessionID, r.Passwd, r.Timeout = resp.SessionID, resp.Passwd, resp.TimeOut
	return r, nil
}

// WriteFrame sends one length-prefixed frame whose body fill writes.
func (r *Raw) WriteFrame(fill func(e *zkproto.Encoder)) error {
	e := zkproto.NewEncoder([]byte{0, 0, 0, 0})
	fill(e)
	b := e.Bytes()
	n := len(b) - 4
	b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	r.NC.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := r.NC.Write(b)
	return err
}

// ReadFrame reads one frame (5 s deadline).
func (r *Raw) ReadFrame() ([]byte, error) {
	r.NC.SetReadDeadline(time.Now().Add(5 * time.Second))
	return zkproto.ReadFrame(r.br, nil, 64<<20)
}

// Call sends a request and waits for its reply, decoding the body into
// resp (which may be nil) when the reply is OK. Notifications that arrive
// first are recorded.
func (r *Raw) Call(op zkproto.OpCode, req, resp zkproto.Record) (zkproto.ReplyHeader, error) {
	r.xid++
	xid := r.xid
	switch op {
	case zkproto.OpPing:
		xid = zkproto.XidPing
	case zkproto.OpAuth:
		xid = zkproto.XidAuth
	case zkproto.OpSetWatches, zkproto.OpSetWatches2:
		xid = zkproto.XidSetWatches
	}
	if err := r.WriteFrame(func(e *zkproto.Encoder) {
		(&zkproto.RequestHeader{Xid: xid, Op: op}).Encode(e)
		if req != nil {
			req.Encode(e)
		}
	}); err != nil {
		return zkproto.ReplyHeader{}, err
	}
	for {
		frame, err := r.ReadFrame()
		if err != nil {
			return zkproto.ReplyHeader{}, err
		}
		d := zkproto.NewDecoder(frame)
		var h zkproto.ReplyHeader
		if err := h.Decode(d); err != nil {
			return h, err
		}
		if h.Xid == zkproto.XidNotification {
			var ev zkproto.WatcherEvent
			if err := ev.Decode(d); err != nil {
				return h, err
			}
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
			continue
		}
		if h.Xid != xid {
			return h, fmt.Errorf("reply xid %d, expected %d", h.Xid, xid)
		}
		if h.Zxid > 0 {
			r.LastZxid = h.Zxid
		}
		if h.Err == zkproto.OK && resp != nil {
			if err := resp.Decode(d); err != nil {
				return h, fmt.Errorf("decoding %s reply: %w", op, err)
			}
		}
		return h, nil
	}
}

// Events returns and clears the notifications received so far.
func (r *Raw) Events() []zkproto.WatcherEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events
	r.events = nil
	return ev
}

// WaitEvent reads frames until a notification arrives (or timeout).
func (r *Raw) WaitEvent(timeout time.Duration) (zkproto.WatcherEvent, error) {
	if ev := r.Events(); len(ev) > 0 {
		r.mu.Lock()
		r.events = append(ev[1:], r.events...)
		r.mu.Unlock()
		return ev[0], nil
	}
	r.NC.SetReadDeadline(time.Now().Add(timeout))
	frame, err := zkproto.ReadFrame(r.br, nil, 64<<20)
	if err != nil {
		return zkproto.WatcherEvent{}, err
	}
	d := zkproto.NewDecoder(frame)
	var h zkproto.ReplyHeader
	var ev zkproto.WatcherEvent
	if err := h.Decode(d); err != nil {
		return ev, err
	}
	if h.Xid != zkproto.XidNotification {
		return ev, fmt.Errorf("expected a notification, got xid %d", h.Xid)
	}
	return ev, ev.Decode(d)
}

// Close closes the socket without closing the session.
func (r *Raw) Close() { r.NC.Close() }
