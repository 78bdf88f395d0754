package bench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// liveBufferBytes is the read buffer of a liveSession: the sessions
// benchmark holds tens of thousands of them, whose replies and
// notifications are a few dozen bytes (a larger frame still reads, in
// more than one call).
const liveBufferBytes = 1024

// liveWriteTimeout bounds one write to a server, so that a server that
// stops reading cannot block the pings of every other session.
const liveWriteTimeout = 10 * time.Second

// liveMaxFrame bounds a frame read from a server.
const liveMaxFrame = 4 << 20

// pingFrame is a ping request: length 8, xid -2, opcode 11.
var pingFrame = zkproto.EncodeRequest(nil, zkproto.RequestHeader{Xid: zkproto.XidPing, Op: zkproto.OpPing}, nil)

// replyFunc receives the reply to one request: its error code and body
// (valid only during the call), or ErrConnectionLoss when the connection
// failed first.
type replyFunc func(code zkproto.Code, body []byte)

// liveSession is one session of the sessions benchmark: a connection with
// a small buffer and one reader goroutine, kept alive by pings as
// ZooKeeper's clients keep theirs, so that one process can hold
// thousands. Replies arrive in request order (ZooKeeper's guarantee), so
// each is matched with the oldest pending request.
type liveSession struct {
	index   int // the session's number in the run, which picks its server and source address
	nc      *net.TCPConn
	id      int64
	timeout time.Duration // negotiated

	wmu  sync.Mutex
	xid  zkproto.Xid
	wbuf []byte
	// lastSend is when a request last left, in nanoseconds on the
	// holder's clock: the ping is due a third of the timeout later.
	lastSend atomic.Int64

	pmu  sync.Mutex
	pend []replyFunc

	// onNotify, set before the reader starts, receives each watch
	// notification and when it arrived.
	onNotify func(ev zkproto.WatcherEvent, at time.Time)
	pongs    atomic.Int64
	// closing is set when the benchmark closes the connection itself, so
	// that its end does not count as a lost session.
	closing atomic.Bool
	done    chan struct{} // closed when the reader has stopped
	err     error         // why the reader stopped, once done is closed
}

// dialLive connects to addr from the local address src (nil: any),
// completes the handshake of a new session asking for timeout by
// deadline, and returns the session without starting its reader.
func dialLive(addr string, src net.IP, timeout time.Duration, deadline time.Time) (*liveSession, *bufio.Reader, error) {
	d := net.Dialer{Deadline: deadline}
	if src != nil {
		d.LocalAddr = &net.TCPAddr{IP: src}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	nc := c.(*net.TCPConn)
	br := bufio.NewReaderSize(nc, liveBufferBytes)
	req := &zkproto.ConnectRequest{TimeOut: int32(timeout / time.Millisecond), Passwd: make([]byte, 16), HasReadOnly: true}
	resp, err := handshake(nc, br, req, deadline)
	if err != nil {
		// Reset, not closed in order: a refused attempt must not hold
		// its source port in TIME_WAIT, as thousands may be refused.
		nc.SetLinger(0)
		nc.Close()
		return nil, nil, err
	}
	return &liveSession{nc: nc, id: resp.SessionID, timeout: time.Duration(resp.TimeOut) * time.Millisecond,
		done: make(chan struct{})}, br, nil
}

// start runs the reader; now is the holder's clock.
func (s *liveSession) start(br *bufio.Reader, now func() int64) {
	s.lastSend.Store(now())
	go s.readLoop(br)
}

// readLoop reads frames until the connection fails: ping replies are
// counted, notifications handed to onNotify, replies to their requests.
func (s *liveSession) readLoop(br *bufio.Reader) {
	var buf []byte
	err := func() error {
		for {
			frame, err := zkproto.ReadFrame(br, buf, liveMaxFrame)
			if err != nil {
				return err
			}
			buf = frame
			if len(frame) < 16 {
				return fmt.Errorf("reply of %d bytes", len(frame))
			}
			switch xid := zkproto.Xid(int32(binary.BigEndian.Uint32(frame))); xid {
			case zkproto.XidPing:
				s.pongs.Add(1)
			case zkproto.XidNotification:
				at := time.Now()
				var ev zkproto.WatcherEvent
				if err := ev.Decode(zkproto.NewDecoder(frame[16:])); err != nil {
					return fmt.Errorf("notification: %w", err)
				}
				if s.onNotify != nil {
					s.onNotify(ev, at)
				}
			default:
				s.pmu.Lock()
				if len(s.pend) == 0 {
					s.pmu.Unlock()
					return fmt.Errorf("reply with xid %d to no request", xid)
				}
				f := s.pend[0]
				s.pend[0] = nil
				s.pend = s.pend[1:]
				s.pmu.Unlock()
				f(zkproto.Code(int32(binary.BigEndian.Uint32(frame[12:]))), frame[16:])
			}
		}
	}()
	s.nc.Close()
	s.pmu.Lock()
	pend := s.pend
	s.pend = nil
	s.err = err
	s.pmu.Unlock()
	for _, f := range pend {
		f(zkproto.ErrConnectionLoss, nil)
	}
	close(s.done)
}

// send writes one request; f receives its reply. now is the holder's
// clock. An error wraps ErrConnectionLoss: the connection is lost.
func (s *liveSession) send(op zkproto.OpCode, body zkproto.Record, now int64, f replyFunc) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.xid++
	if s.xid <= 0 {
		s.xid = 1
	}
	s.wbuf = zkproto.EncodeRequest(s.wbuf[:0], zkproto.RequestHeader{Xid: s.xid, Op: op}, body)
	s.pmu.Lock()
	if s.err != nil {
		s.pmu.Unlock()
		return fmt.Errorf("%w: %v", zkproto.ErrConnectionLoss, s.err)
	}
	s.pend = append(s.pend, f)
	s.pmu.Unlock()
	if err := s.write(s.wbuf, now); err != nil {
		return fmt.Errorf("%w: %v", zkproto.ErrConnectionLoss, err)
	}
	return nil
}

// ended reports whether the connection has ended (its reader stopped).
func (s *liveSession) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// ping sends a ping if nothing was sent for interval; it reports whether
// it sent one.
func (s *liveSession) ping(now, interval int64) (bool, error) {
	if now-s.lastSend.Load() < interval || s.closing.Load() {
		return false, nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return true, s.write(pingFrame, now)
}

// write writes b and notes the time; wmu is held.
func (s *liveSession) write(b []byte, now int64) error {
	s.lastSend.Store(now)
	s.nc.SetWriteDeadline(time.Now().Add(liveWriteTimeout))
	_, err := s.nc.Write(b)
	return err
}

// drop closes the connection without ending the session, as a client
// whose process dies does; the servers expire the session after its
// timeout. The socket is reset rather than closed in order (no
// TIME_WAIT), so that the source ports are free again at once.
func (s *liveSession) drop() {
	s.closing.Store(true)
	s.nc.SetLinger(0)
	s.nc.Close()
}

// closeSession ends the session as a client's close does, waiting up to
// wait for the server's answer, then closes the connection.
func (s *liveSession) closeSession(now int64, wait time.Duration) error {
	s.closing.Store(true)
	answered := make(chan zkproto.Code, 1)
	err := s.send(zkproto.OpCloseSession, nil, now, func(code zkproto.Code, _ []byte) { answered <- code })
	if err == nil {
		select {
		case code := <-answered:
			if code != zkproto.OK && code != zkproto.ErrConnectionLoss {
				err = code
			}
		case <-time.After(wait):
			err = errors.New("no answer to closeSession")
		}
	}
	s.nc.Close()
	return err
}
