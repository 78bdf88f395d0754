package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// writeBufferSize is the buffer of a peer's writer: a batch of small
// messages leaves in one syscall, a frame larger than it goes straight to
// the socket.
const writeBufferSize = 64 << 10

// minWriteRate is the slowest rate at which a peer is expected to take a
// batch; a write that is slower than WriteTimeout plus size/minWriteRate
// breaks the connection (a stopped peer whose socket buffers are full must
// not hold its writer forever).
const minWriteRate = 8 << 20 // bytes per second

// outMsg is a framed, encoded message waiting in a peer's queue.
type outMsg struct {
	frame []byte    // length prefix and encoding
	seq   uint64    // place among the peer's queued messages
	due   time.Time // not written before (outbound delay fault)
}

// peer is the outgoing side of the link to one server: a bounded queue
// filled by Send and drained by one writer goroutine (run) that owns the
// connection, dials it again when it breaks, and never blocks Send.
//
// Messages that carry a snapshot take a lane of their own, one at a time:
// the writer sends them a chunk at a time between the batches of the
// queue, so that heartbeats and appends keep flowing while a snapshot of
// gigabytes is on its way. Such a message is sent after the messages
// queued before it and may arrive after messages queued after it, which
// Group Paxos tolerates as it tolerates any reordering. A newer snapshot
// replaces one not yet started, and is dropped while one is being
// written: the peer asks again after installing the first, and a lagging
// server asking once a heartbeat must not queue copies of gigabytes.
type peer struct {
	t   *Transport
	id  gpaxos.ID
	log *slog.Logger

	mu      sync.Mutex
	addr    string
	q       []outMsg
	qBytes  int
	seq     uint64   // messages ever queued, bulk ones included
	bulk    *bulkMsg // the snapshot on its way, if any
	conn    net.Conn // current connection (dialing or established), closed by shutdown
	stopped bool

	kick   chan struct{} // a message was queued
	redial chan struct{} // the address changed: skip the backoff
	stop   chan struct{}
	done   chan struct{}
	ctx    context.Context // cancels a dial in progress
	cancel context.CancelFunc

	connected     atomic.Bool
	everConnected bool // touched by the writer goroutine only
	sent          atomic.Uint64
	dropped       atomic.Uint64
	connects      atomic.Uint64
}

func newPeer(t *Transport, id gpaxos.ID, addr string) *peer {
	ctx, cancel := context.WithCancel(context.Background())
	return &peer{
		t: t, id: id, addr: addr,
		log:  t.log.With("peer", uint64(id)),
		kick: make(chan struct{}, 1), redial: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}),
		ctx: ctx, cancel: cancel,
	}
}

// admits reports whether a frame of size bytes would currently fit, so
// that Send does not encode a large message only to drop it.
func (p *peer) admits(size int) dropReason {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.admitsLocked(size)
}

func (p *peer) admitsLocked(size int) dropReason {
	cfg := &p.t.cfg
	switch {
	case p.stopped:
		return dropUnknownPeer // removed by SetPeers while Send looked it up
	case len(p.q) >= cfg.QueueLen:
		return dropQueueFull
	case len(p.q) > 0 && p.qBytes+size > cfg.QueueBytes:
		return dropQueueBytes
	}
	return dropNone
}

// enqueue queues a frame for the writer unless the queue is full.
func (p *peer) enqueue(frame []byte, due time.Time) dropReason {
	p.mu.Lock()
	if r := p.admitsLocked(len(frame)); r != dropNone {
		p.mu.Unlock()
		return r
	}
	p.seq++
	p.q = append(p.q, outMsg{frame: frame, seq: p.seq, due: due})
	p.qBytes += len(frame)
	p.mu.Unlock()
	signal(p.kick)
	return dropNone
}

// enqueueBulk puts m, which carries a snapshot and encodes in size bytes,
// on the bulk lane unless another is being written there; one not started
// yet is replaced, and counted as dropped.
func (p *peer) enqueueBulk(m *gpaxos.Message, size int, due time.Time) dropReason {
	p.mu.Lock()
	switch {
	case p.stopped:
		p.mu.Unlock()
		return dropUnknownPeer
	case p.bulk != nil && p.bulk.started:
		p.mu.Unlock()
		return dropSnapshotBusy
	}
	replaced := p.bulk != nil
	p.seq++
	p.bulk = newBulkMsg(m, size, p.seq, due)
	p.mu.Unlock()
	if replaced {
		p.dropped.Add(1)
		p.t.stats.drop(dropSnapshotReplaced, 1)
	}
	signal(p.kick)
	return dropNone
}

// dropStartedBulk drops the bulk message if part of it went out on the
// connection that just ended: the receiver dropped that part with it, and
// the next connection cannot resume the message.
func (p *peer) dropStartedBulk() {
	p.mu.Lock()
	started := p.bulk != nil && p.bulk.started
	if started {
		p.bulk = nil
	}
	p.mu.Unlock()
	if started {
		p.dropped.Add(1)
		p.t.stats.drop(dropUnsent, 1)
	}
}

// startBulk marks b as started, so that it is no longer replaced.
func (p *peer) startBulk(b *bulkMsg) {
	p.mu.Lock()
	b.started = true
	p.mu.Unlock()
}

// endBulk takes b off the bulk lane, written whole or lost with the
// connection.
func (p *peer) endBulk(b *bulkMsg) {
	p.mu.Lock()
	if p.bulk == b {
		p.bulk = nil
	}
	p.mu.Unlock()
}

// take moves the messages due at now from the head of the queue to batch,
// and returns the bulk message if it is due too. When something queued is
// not due it returns when the first of it will be.
func (p *peer) take(batch []outMsg, now time.Time) ([]outMsg, *bulkMsg, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(p.q) && !p.q[n].due.After(now) {
		p.qBytes -= len(p.q[n].frame)
		n++
	}
	batch = append(batch, p.q[:n]...)
	rest := copy(p.q, p.q[n:])
	clear(p.q[rest:]) // release the frames for the collector
	p.q = p.q[:rest]
	var next time.Time
	if rest > 0 {
		next = p.q[0].due
	}
	bulk := p.bulk
	if bulk != nil && bulk.due.After(now) {
		if next.IsZero() || bulk.due.Before(next) {
			next = bulk.due
		}
		bulk = nil
	}
	return batch, bulk, next
}

// run is the writer goroutine: connect, write until the connection breaks,
// repeat until shutdown.
func (p *peer) run() {
	defer close(p.done)
	bo := backoff{min: p.t.cfg.BackoffMin, max: p.t.cfg.BackoffMax}
	for {
		c := p.dial(&bo)
		if c == nil {
			break
		}
		p.serve(c)
		if p.isStopped() {
			break
		}
	}
	p.mu.Lock()
	n := len(p.q)
	clear(p.q)
	p.q, p.qBytes = nil, 0
	if p.bulk != nil {
		p.bulk = nil
		n++
	}
	p.mu.Unlock()
	p.dropped.Add(uint64(n))
	p.t.stats.drop(dropUnsent, uint64(n))
}

func (p *peer) isStopped() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// dial connects and handshakes, retrying with backoff; nil after shutdown.
func (p *peer) dial(bo *backoff) net.Conn {
	failures, wasRejected := 0, false
	for !p.isStopped() {
		p.mu.Lock()
		addr := p.addr
		p.mu.Unlock()
		p.t.stats.dials.Add(1)
		c, err := p.connect(addr)
		if err == nil {
			bo.reset()
			return c
		}
		if p.isStopped() {
			return nil
		}
		p.t.stats.dialFailures.Add(1)
		failures++
		// The first failure of a streak is worth a line, and so is a
		// change between unreachable and refused (a peer that was down
		// comes back and refuses the handshake, or its certificate is
		// refused here); a peer that stays down for minutes would
		// otherwise flood the log at the backoff rate.
		rejected := errors.Is(err, ErrRejected)
		level := slog.LevelDebug
		if failures == 1 || rejected != wasRejected || rejected && failures%100 == 1 {
			level = slog.LevelWarn
		}
		wasRejected = rejected
		p.log.Log(context.Background(), level, "transport: cannot connect to peer", "addr", addr, "err", err, "attempt", failures)
		t := time.NewTimer(bo.next())
		select {
		case <-t.C:
		case <-p.redial:
			t.Stop()
		case <-p.stop:
			t.Stop()
			return nil
		}
	}
	return nil
}

// connect dials addr and runs the dialer's side of the handshake.
func (p *peer) connect(addr string) (net.Conn, error) {
	cfg := &p.t.cfg
	d := net.Dialer{Timeout: cfg.DialTimeout}
	c, err := d.DialContext(p.ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if !p.setConn(c, addr) {
		c.Close()
		return nil, net.ErrClosed
	}
	fail := func(err error) (net.Conn, error) {
		c.Close()
		p.clearConn(c)
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		// Messages are latency-bound (acks, heartbeats) and the writer
		// batches on its own, so Nagle's delay would only add latency.
		if err := tc.SetNoDelay(true); err != nil {
			return fail(err)
		}
	}
	if err := c.SetDeadline(time.Now().Add(cfg.HandshakeTimeout)); err != nil {
		return fail(err)
	}
	if cfg.TLS != nil {
		host, _, _ := net.SplitHostPort(addr)
		tc := tls.Client(c, cfg.TLS.Client(host))
		if !p.swapConn(c, tc) {
			return fail(net.ErrClosed)
		}
		c = tc
		if err := tc.HandshakeContext(p.ctx); err != nil {
			// Refused by the peer, or the peer's certificate refused here:
			// either way, logged as the peer's rejection is.
			return fail(fmt.Errorf("%w: TLS: %w", ErrRejected, err))
		}
	}
	h := hello{Cluster: cfg.Cluster, From: cfg.ID, To: p.id, Addr: p.t.Addr().String(),
		Namespaces: cfg.Namespaces.Hash(), NamespacesText: cfg.Namespaces.String()}.encode()
	if _, err := c.Write(append(appendFrameHeader(nil, len(h)), h...)); err != nil {
		return fail(err)
	}
	frame, err := readFrame(bufio.NewReaderSize(c, 512), maxHandshakeFrame)
	if err != nil {
		return fail(err)
	}
	a, err := decodeAck(frame)
	if err != nil {
		return fail(err)
	}
	if a.Reason != "" {
		return fail(errors.Join(ErrRejected, errors.New(a.Reason)))
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return fail(err)
	}
	return c, nil
}

// serve writes queued messages to c until it breaks or the peer stops.
func (p *peer) serve(c net.Conn) {
	p.connected.Store(true)
	p.connects.Add(1)
	p.t.stats.connects.Add(1)
	if p.everConnected {
		p.t.stats.reconnects.Add(1)
	}
	p.everConnected = true
	p.log.Info("transport: connected to peer", "addr", c.RemoteAddr().String())

	// The peer never writes after its ack, so a read returns only when the
	// connection ends: this notices a restarted peer at once instead of at
	// the next write, which the kernel might still accept into a dead
	// socket's buffer.
	dead := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, c)
		close(dead)
	}()
	defer func() {
		c.Close()
		<-dead
		p.connected.Store(false)
		p.clearConn(c)
		p.dropStartedBulk()
	}()

	bw := bufio.NewWriterSize(c, writeBufferSize)
	var batch []outMsg
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if gate := p.t.faults.gate(); !isClosed(gate) {
			select {
			case <-gate:
			case <-p.stop:
				return
			case <-dead:
				p.log.Warn("transport: connection to peer lost", "reason", "closed by peer")
				return
			}
		}
		var next time.Time
		var bulk *bulkMsg
		batch, bulk, next = p.take(batch[:0], time.Now())
		if len(batch) == 0 && bulk == nil {
			var wake <-chan time.Time
			if !next.IsZero() {
				if timer == nil {
					timer = time.NewTimer(time.Until(next))
				} else {
					timer.Reset(time.Until(next))
				}
				wake = timer.C
			}
			select {
			case <-p.kick:
			case <-wake:
			case <-p.stop:
				return
			case <-dead:
				p.log.Warn("transport: connection to peer lost", "reason", "closed by peer")
				return
			}
			if timer != nil {
				timer.Stop()
			}
			continue
		}
		if err := p.write(c, bw, batch, bulk); err != nil {
			p.dropped.Add(uint64(len(batch)))
			p.t.stats.drop(dropUnsent, uint64(len(batch)))
			if !p.isStopped() {
				p.log.Warn("transport: connection to peer lost", "err", err, "unsent", len(batch))
			}
			return
		}
		clear(batch)
	}
}

// write sends a batch and the next chunk of bulk, if any, with one flush:
// the chunk goes after the messages queued before bulk.
func (p *peer) write(c net.Conn, bw *bufio.Writer, batch []outMsg, bulk *bulkMsg) error {
	n := 0
	for _, m := range batch {
		n += len(m.frame)
	}
	chunk := chunkPayload(p.t.cfg.MaxFrameSize)
	if bulk != nil {
		n += chunk
	}
	deadline := p.t.cfg.WriteTimeout + time.Duration(n)*time.Second/minWriteRate
	if err := c.SetWriteDeadline(time.Now().Add(deadline)); err != nil {
		return err
	}
	n, i := 0, 0
	if bulk != nil {
		for ; i < len(batch) && batch[i].seq < bulk.seq; i++ {
			if _, err := bw.Write(batch[i].frame); err != nil {
				return err
			}
			n += len(batch[i].frame)
		}
		if bulk.sent == 0 {
			p.startBulk(bulk)
		}
		k, err := bulk.writeChunk(bw, chunk)
		if err != nil {
			return err
		}
		n += k
	}
	for ; i < len(batch); i++ {
		if _, err := bw.Write(batch[i].frame); err != nil {
			return err
		}
		n += len(batch[i].frame)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	sent := len(batch)
	if bulk != nil && bulk.done() {
		p.endBulk(bulk)
		sent++
	}
	st := &p.t.stats
	st.flushes.Add(1)
	st.sent.Add(uint64(sent))
	st.sentBytes.Add(uint64(n))
	p.sent.Add(uint64(sent))
	return nil
}

// setConn records c, dialed at addr, as the current connection; false
// after shutdown or when the address changed while c was being dialed.
func (p *peer) setConn(c net.Conn, addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A new address set while this one was being dialed (setAddr found no
	// connection to close) makes the connection stale: the peer moved.
	if p.stopped || p.addr != addr {
		return false
	}
	p.conn = c
	return true
}

// swapConn makes c, the connection being dialed, tc, the TLS connection
// over it, so that shutting the peer down closes tc; false if c is no
// longer the peer's connection.
func (p *peer) swapConn(c, tc net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != c {
		return false
	}
	p.conn = tc
	return true
}

func (p *peer) clearConn(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == c {
		p.conn = nil
	}
}

// setAddr changes the peer's address; the current connection, which goes to
// the old one, is closed so that the writer dials the new one.
func (p *peer) setAddr(addr string) {
	p.mu.Lock()
	if p.addr == addr {
		p.mu.Unlock()
		return
	}
	p.addr = addr
	c := p.conn
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
	signal(p.redial)
}

// shutdown stops the writer; wait on p.done for it to exit.
func (p *peer) shutdown() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	c := p.conn
	p.mu.Unlock()
	p.cancel()
	close(p.stop)
	if c != nil {
		c.Close()
	}
}

func (p *peer) snapshot() PeerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	queued, bytes := len(p.q), p.qBytes
	if p.bulk != nil {
		queued++
		bytes += p.bulk.size
	}
	return PeerStats{
		Addr:        p.addr,
		Connected:   p.connected.Load(),
		Queued:      queued,
		QueuedBytes: bytes,
		Sent:        p.sent.Load(),
		Dropped:     p.dropped.Load(),
		Connects:    p.connects.Load(),
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
