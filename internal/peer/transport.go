package peer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// Config configures a Transport.
type Config struct {
	// ID is this server.
	ID gpaxos.ID
	// Listen is the peer address to accept connections on.
	Listen string
	// Peers maps every other member to its peer address.
	Peers map[gpaxos.ID]string
	// Cluster names the ensemble; a peer with another name is refused.
	Cluster string
	// MaxFrame bounds one message on the wire (snapshots travel in one);
	// zero means 512 MiB.
	MaxFrame int
	// QueueMessages and QueueBytes bound each peer's outgoing queue; zero
	// means 16384 messages and 256 MiB.
	QueueMessages, QueueBytes int
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Stats are the transport's counters.
type Stats struct {
	Sent, Received, Dropped, DroppedFull, Reconnects, BytesSent, BytesReceived uint64
}

// Transport sends and receives messages between ensemble members. Create
// it with Listen; Send and Recv are safe for concurrent use.
type Transport struct {
	cfg    Config
	ln     net.Listener
	recv   chan gpaxos.Message
	faults *Faults

	mu     sync.Mutex
	peers  map[gpaxos.ID]*outPeer
	conns  map[net.Conn]bool
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup

	sent, received, dropped, droppedFull, reconnects, bytesSent, bytesReceived atomic.Uint64
}

// Listen opens the peer port and returns a running transport.
func Listen(cfg Config) (*Transport, error) {
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = 512 << 20
	}
	if cfg.QueueMessages <= 0 {
		cfg.QueueMessages = 16384
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = 256 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	t := &Transport{cfg: cfg, ln: ln, recv: make(chan gpaxos.Message, 8192), faults: newFaults(),
		peers: map[gpaxos.ID]*outPeer{}, conns: map[net.Conn]bool{}, done: make(chan struct{})}
	t.wg.Add(1)
	go t.acceptLoop()
	return t, nil
}

// Addr returns the address the transport listens on.
func (t *Transport) Addr() net.Addr { return t.ln.Addr() }

// Recv returns the channel of received messages.
func (t *Transport) Recv() <-chan gpaxos.Message { return t.recv }

// Faults returns the fault injector.
func (t *Transport) Faults() *Faults { return t.faults }

// Stats returns the counters.
func (t *Transport) Stats() Stats {
	return Stats{Sent: t.sent.Load(), Received: t.received.Load(), Dropped: t.dropped.Load(),
		DroppedFull: t.droppedFull.Load(), Reconnects: t.reconnects.Load(),
		BytesSent: t.bytesSent.Load(), BytesReceived: t.bytesReceived.Load()}
}

// SetPeers replaces the address book (servers join and leave).
func (t *Transport) SetPeers(peers map[gpaxos.ID]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cfg.Peers = peers
	for id, p := range t.peers {
		if addr, ok := peers[id]; !ok || addr != p.addr {
			p.stop()
			delete(t.peers, id)
		}
	}
}

// Send queues m for its destination and returns at once.
func (t *Transport) Send(m gpaxos.Message) {
	drop, delay := t.faults.outgoing(m.To)
	if drop {
		t.dropped.Add(1)
		return
	}
	p := t.peer(m.To)
	if p == nil {
		t.dropped.Add(1)
		return
	}
	if delay > 0 {
		p.enqueueAt(m, time.Now().Add(delay))
		return
	}
	p.enqueueAt(m, time.Time{})
}

// peer returns the outgoing side for id, starting it on first use.
func (t *Transport) peer(id gpaxos.ID) *outPeer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if p := t.peers[id]; p != nil {
		return p
	}
	addr, ok := t.cfg.Peers[id]
	if !ok {
		return nil
	}
	p := &outPeer{t: t, id: id, addr: addr, wake: make(chan struct{}, 1), quit: make(chan struct{})}
	t.peers[id] = p
	t.wg.Add(1)
	go p.run()
	return p
}

// Close stops the transport and waits for its goroutines.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.done)
	err := t.ln.Close()
	for _, p := range t.peers {
		p.stop()
	}
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return err
}

// The handshake a dialer sends first: magic, sender id, cluster name.
const helloMagic = "GIRAFFE-PEER-1"

func writeHello(w io.Writer, id gpaxos.ID, cluster string) error {
	b := []byte(helloMagic)
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	b = binary.BigEndian.AppendUint16(b, uint16(len(cluster)))
	b = append(b, cluster...)
	_, err := w.Write(b)
	return err
}

func readHello(r io.Reader) (gpaxos.ID, string, error) {
	head := make([]byte, len(helloMagic)+10)
	if _, err := io.ReadFull(r, head); err != nil {
		return 0, "", err
	}
	if string(head[:len(helloMagic)]) != helloMagic {
		return 0, "", errors.New("not a Giraffe peer (bad handshake)")
	}
	id := gpaxos.ID(binary.BigEndian.Uint64(head[len(helloMagic):]))
	name := make([]byte, binary.BigEndian.Uint16(head[len(helloMagic)+8:]))
	if _, err := io.ReadFull(r, name); err != nil {
		return 0, "", err
	}
	return id, string(name), nil
}

func (t *Transport) acceptLoop() {
	defer t.wg.Done()
	for {
		nc, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.done:
				return
			default:
			}
			t.cfg.Logger.Warn("peer accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			nc.Close()
			return
		}
		t.conns[nc] = true
		t.wg.Add(1)
		t.mu.Unlock()
		go t.readLoop(nc)
	}
}

// readLoop reads one peer's messages. A connection that fails the
// handshake or sends a malformed frame is closed with a log line saying
// why; the other peers are not affected.
func (t *Transport) readLoop(nc net.Conn) {
	defer t.wg.Done()
	defer func() {
		nc.Close()
		t.mu.Lock()
		delete(t.conns, nc)
		t.mu.Unlock()
	}()
	remote := nc.RemoteAddr().String()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(nc, 256<<10)
	from, cluster, err := readHello(br)
	if err != nil {
		t.cfg.Logger.Warn("closing peer connection: handshake failed", "remote", remote, "err", err)
		return
	}
	t.mu.Lock()
	_, known := t.cfg.Peers[from]
	t.mu.Unlock()
	if cluster != t.cfg.Cluster || !known {
		t.cfg.Logger.Warn("closing peer connection: not a member of this ensemble", "remote", remote,
			"id", from, "cluster", cluster)
		return
	}
	nc.SetReadDeadline(time.Time{})
	var lenBuf [4]byte
	buf := make([]byte, 0, 64<<10)
	for {
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(lenBuf[:]))
		if n > t.cfg.MaxFrame {
			t.cfg.Logger.Warn("closing peer connection: frame too large", "remote", remote, "id", from, "bytes", n)
			return
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return
		}
		m, err := Decode(buf)
		if err != nil {
			t.cfg.Logger.Warn("closing peer connection: malformed message", "remote", remote, "id", from, "err", err)
			return
		}
		if m.From != from || m.To != t.cfg.ID {
			t.cfg.Logger.Warn("closing peer connection: message not from the peer or not for us", "remote", remote,
				"id", from, "from", m.From, "to", m.To)
			return
		}
		t.received.Add(1)
		t.bytesReceived.Add(uint64(n + 4))
		if t.faults.incoming() {
			continue
		}
		select {
		case t.recv <- m:
		case <-t.done:
			return
		}
	}
}

// outPeer is the outgoing side of one peer: a bounded queue and the
// goroutine that dials and writes.
type outPeer struct {
	t    *Transport
	id   gpaxos.ID
	addr string

	mu    sync.Mutex
	queue []queued
	bytes int
	wake  chan struct{}
	quit  chan struct{}
	once  sync.Once
}

type queued struct {
	m  gpaxos.Message
	at time.Time // send no earlier than this (injected delay)
}

func (p *outPeer) stop() { p.once.Do(func() { close(p.quit) }) }

func (p *outPeer) enqueueAt(m gpaxos.Message, at time.Time) {
	size := m.Size()
	p.mu.Lock()
	if len(p.queue) >= p.t.cfg.QueueMessages || p.bytes+size > p.t.cfg.QueueBytes {
		p.mu.Unlock()
		p.t.droppedFull.Add(1)
		return
	}
	p.queue = append(p.queue, queued{m: m, at: at})
	p.bytes += size
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take removes the queued messages that are due, in order; wait is how
// long until the next one is due when none is.
func (p *outPeer) take(now time.Time) (out []gpaxos.Message, wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := 0
	for i < len(p.queue) && !p.queue[i].at.After(now) {
		out = append(out, p.queue[i].m)
		p.bytes -= p.queue[i].m.Size()
		i++
	}
	p.queue = append(p.queue[:0], p.queue[i:]...)
	if len(out) == 0 && len(p.queue) > 0 {
		wait = p.queue[0].at.Sub(now)
	}
	return out, wait
}

// dropQueue discards what is queued (the peer is unreachable).
func (p *outPeer) dropQueue() {
	p.mu.Lock()
	n := len(p.queue)
	p.queue, p.bytes = p.queue[:0], 0
	p.mu.Unlock()
	p.t.dropped.Add(uint64(n))
}

func (p *outPeer) run() {
	defer p.t.wg.Done()
	backoff := 10 * time.Millisecond
	var nc net.Conn
	var bw *bufio.Writer
	defer func() {
		if nc != nil {
			nc.Close()
		}
	}()
	var frame []byte
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-p.wake:
		case <-timer.C:
		}
		for {
			msgs, wait := p.take(time.Now())
			if len(msgs) == 0 {
				if wait > 0 {
					timer.Reset(wait)
				}
				break
			}
			if nc == nil {
				c, err := net.DialTimeout("tcp", p.addr, time.Second)
				if err == nil {
					err = writeHello(c, p.t.cfg.ID, p.t.cfg.Cluster)
				}
				if err != nil {
					if c != nil {
						c.Close()
					}
					p.t.dropped.Add(uint64(len(msgs)))
					p.dropQueue()
					// Wait before the next attempt; messages sent meanwhile
					// are dropped by the next round, which the protocol's
					// retransmissions make up for.
					sleep := backoff/2 + time.Duration(rand.Int63n(int64(backoff)))
					backoff = min(2*backoff, time.Second)
					select {
					case <-p.quit:
						return
					case <-time.After(sleep):
					}
					continue
				}
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetNoDelay(true)
				}
				nc, bw = c, bufio.NewWriterSize(c, 256<<10)
				backoff = 10 * time.Millisecond
				p.t.reconnects.Add(1)
			}
			var err error
			for i := range msgs {
				frame = Encode(append(frame[:0], 0, 0, 0, 0), &msgs[i])
				binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
				if _, err = bw.Write(frame); err != nil {
					break
				}
				p.t.bytesSent.Add(uint64(len(frame)))
			}
			if err == nil {
				err = bw.Flush()
			}
			if err != nil {
				p.t.cfg.Logger.Debug("peer connection lost", "peer", p.id, "err", err)
				p.t.dropped.Add(uint64(len(msgs)))
				nc.Close()
				nc = nil
				continue
			}
			p.t.sent.Add(uint64(len(msgs)))
		}
	}
}

// String describes the transport for logs.
func (t *Transport) String() string {
	return fmt.Sprintf("peer transport %d on %s", t.cfg.ID, t.ln.Addr())
}
