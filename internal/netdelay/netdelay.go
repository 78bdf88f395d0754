// Package netdelay adds a round-trip time to TCP connections, for
// benchmarks that emulate distant clients (the user-to-server RTT of The
// Cost of Consensus) on one machine, where the kernel offers no netem.
//
// A delayed connection holds every chunk written for half the added RTT
// before sending it and every chunk read for the other half before handing
// it over, keeping the byte order in each direction and without slowing
// the writer: many requests can be on the way at once, as over a long
// link. Bandwidth is not limited.
package netdelay

import (
	"context"
	"io"
	"net"
	"sync"
	"time"
)

// Dialer returns a dial function whose connections add rtt to every round
// trip (rtt/2 each way). Its signature is that of client.DialFunc.
func Dialer(rtt time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil || rtt <= 0 {
			return nc, err
		}
		return Wrap(nc, rtt), nil
	}
}

// Wrap returns nc with rtt added to its round trips.
func Wrap(nc net.Conn, rtt time.Duration) net.Conn {
	c := &conn{Conn: nc, half: rtt / 2, out: make(chan chunk, 4096), in: make(chan chunk, 4096), done: make(chan struct{})}
	go c.sender()
	go c.receiver()
	return c
}

// chunk is bytes with the time they may move on.
type chunk struct {
	at  time.Time
	b   []byte
	err error
}

type conn struct {
	net.Conn
	half time.Duration
	out  chan chunk // written, waiting to be sent
	in   chan chunk // received, waiting to be read
	done chan struct{}
	once sync.Once

	pending []byte // the rest of a chunk a short Read left
	rerr    error  // the receive side's error, once reached
}

// Write queues p to be sent half an RTT from now.
func (c *conn) Write(p []byte) (int, error) {
	select {
	case <-c.done: // checked first: with room in the queue both cases are ready
		return 0, net.ErrClosed
	default:
	}
	select {
	case c.out <- chunk{at: time.Now().Add(c.half), b: append([]byte(nil), p...)}:
		return len(p), nil
	case <-c.done:
		return 0, net.ErrClosed
	}
}

// sender sends each written chunk when its time comes.
func (c *conn) sender() {
	for {
		select {
		case ch := <-c.out:
			if !sleepUntil(ch.at, c.done) {
				return
			}
			if _, err := c.Conn.Write(ch.b); err != nil {
				c.Close()
				return
			}
		case <-c.done:
			return
		}
	}
}

// receiver reads from the socket and stamps what it got.
func (c *conn) receiver() {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Conn.Read(buf)
		ch := chunk{at: time.Now().Add(c.half), b: append([]byte(nil), buf[:n]...), err: err}
		select {
		case c.in <- ch:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// Read returns received bytes half an RTT after they arrived. Deadlines
// are the socket's: they bound the wait for bytes to arrive, not the
// added half RTT.
func (c *conn) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		var ch chunk
		select {
		case ch = <-c.in:
		case <-c.done:
			return 0, net.ErrClosed
		}
		if !sleepUntil(ch.at, c.done) {
			return 0, net.ErrClosed
		}
		c.pending, c.rerr = ch.b, ch.err
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// Close closes the connection; queued writes are dropped.
func (c *conn) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}

// sleepUntil waits until t, or returns false if done closes first.
func sleepUntil(t time.Time, done <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-done:
		return false
	}
}

var _ io.ReadWriteCloser = (*conn)(nil)
