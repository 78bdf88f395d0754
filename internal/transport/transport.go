package transport

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// Transport carries gpaxos messages between this server and its peers. Send
// and Recv are meant for the one goroutine that drives the gpaxos.Node;
// every other method is safe for concurrent use.
type Transport struct {
	cfg    Config
	log    *slog.Logger
	ln     net.Listener
	faults *Faults
	stats  counters
	inbox  *inbox
	recv   chan []gpaxos.Message

	mu      sync.RWMutex
	peers   map[gpaxos.ID]*peer
	inbound map[net.Conn]gpaxos.ID // accepted connections; None until their handshake passes
	closed  bool

	stop chan struct{}
	wg   sync.WaitGroup // the accept loop, readers and the dispatcher
}

// New listens on cfg.ListenAddr and starts connecting to cfg.Peers.
func New(cfg Config) (*Transport, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	t := &Transport{
		cfg:     cfg,
		log:     cfg.Logger.With("local", uint64(cfg.ID)),
		ln:      ln,
		inbox:   newInbox(cfg.RecvQueueLen, cfg.RecvQueueBytes),
		recv:    make(chan []gpaxos.Message),
		peers:   map[gpaxos.ID]*peer{},
		inbound: map[net.Conn]gpaxos.ID{},
		stop:    make(chan struct{}),
	}
	if cfg.FaultInjection {
		t.faults = newFaults(cfg.FaultSeed)
	}
	t.wg.Add(2)
	go t.acceptLoop()
	go t.dispatch()
	t.SetPeers(cfg.Peers)
	return t, nil
}

// Addr returns the address the transport listens on.
func (t *Transport) Addr() net.Addr { return t.ln.Addr() }

// ID returns this server's ID.
func (t *Transport) ID() gpaxos.ID { return t.cfg.ID }

// Faults returns the fault injector of this transport, nil unless
// Config.FaultInjection.
func (t *Transport) Faults() *Faults { return t.faults }

// Recv returns the channel on which received messages are delivered, in
// order per sending peer, in batches: each holds every message that was
// due when it was made (up to maxRecvBatch), so that a receiver that was
// busy (a replica in an fsync) takes at once all that arrived meanwhile
// and persists it with one fsync. It is closed by Close.
func (t *Transport) Recv() <-chan []gpaxos.Message { return t.recv }

// Send queues m for m.To and returns whether it was queued. It never
// blocks: a message that cannot be queued (unknown destination, full queue,
// too large, a fault rule, transport closed, a snapshot while another is
// being written to the same peer) is dropped and counted in Stats. Send
// encodes m before returning, so the caller may reuse m's slices at once,
// except the data of m's snapshot, which is sent from where it lies and
// must not change (snapshots never do). A message to this server itself is
// delivered through Recv without touching the network.
func (t *Transport) Send(m gpaxos.Message) bool {
	t.mu.RLock()
	closed := t.closed
	p := t.peers[m.To]
	t.mu.RUnlock()
	if closed {
		return t.dropped(nil, dropClosed)
	}
	if m.Type == 0 || m.Type > lastMsgType {
		// Caught here: on the wire it would make the receiver close the
		// connection, losing the messages queued behind it.
		return t.dropped(p, dropInvalid)
	}
	size := EncodedSize(&m)
	if m.To == t.cfg.ID {
		// A copy through the codec gives the receiver what a peer would
		// get (its own buffers, empty slices as nil) and frees the caller's.
		local, err := Decode(Encode(&m))
		if err != nil { // unreachable: the type was checked above
			return t.dropped(nil, dropInvalid)
		}
		// Never wait here: the inbox is emptied by the very goroutine that
		// calls Send, so waiting for room could deadlock it.
		if !t.inbox.tryPush(local, size, time.Now()) {
			return t.dropped(nil, dropInboxFull)
		}
		return true
	}
	if p == nil {
		return t.dropped(nil, dropUnknownPeer)
	}
	if m.Snapshot != nil {
		return t.sendBulk(p, &m, size)
	}
	if size > t.cfg.MaxFrameSize {
		return t.dropped(p, dropTooLarge)
	}
	due, r := t.faults.route(Out, m.To, time.Now())
	if r != dropNone {
		return t.dropped(p, r)
	}
	if r := p.admits(frameHeaderSize + size); r != dropNone {
		return t.dropped(p, r)
	}
	frame := appendFrameHeader(make([]byte, 0, frameHeaderSize+size), size)
	frame = AppendEncode(frame, &m)
	if r := p.enqueue(frame, due); r != dropNone {
		return t.dropped(p, r)
	}
	return true
}

// sendBulk queues m, which carries a snapshot, on p's bulk lane.
func (t *Transport) sendBulk(p *peer, m *gpaxos.Message, size int) bool {
	if size > t.cfg.MaxMessageSize {
		return t.dropped(p, dropTooLarge)
	}
	due, r := t.faults.route(Out, m.To, time.Now())
	if r == dropNone {
		r = p.enqueueBulk(m, size, due)
	}
	if r != dropNone {
		return t.dropped(p, r)
	}
	return true
}

// SendAll sends every message of ms; see Send.
func (t *Transport) SendAll(ms []gpaxos.Message) {
	for i := range ms {
		t.Send(ms[i])
	}
}

func (t *Transport) dropped(p *peer, r dropReason) bool {
	t.stats.drop(r, 1)
	if p != nil {
		p.dropped.Add(1)
	}
	return false
}

// SetPeers replaces the address book: writers start for new peers, stop for
// removed ones (their queued messages are dropped and their incoming
// connections closed), and reconnect for peers whose address changed.
func (t *Transport) SetPeers(peers map[gpaxos.ID]string) error {
	if err := checkPeers(peers); err != nil {
		return err
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return net.ErrClosed
	}
	var removed []*peer
	var closing []net.Conn
	for id, p := range t.peers {
		if _, ok := peers[id]; !ok {
			removed = append(removed, p)
			delete(t.peers, id)
			for c, from := range t.inbound {
				if from == id {
					closing = append(closing, c)
				}
			}
		}
	}
	for id, addr := range peers {
		if id == t.cfg.ID {
			continue
		}
		if p, ok := t.peers[id]; ok {
			p.setAddr(addr)
			continue
		}
		t.addPeer(id, addr)
	}
	t.mu.Unlock()
	for _, c := range closing {
		c.Close()
	}
	for _, p := range removed {
		p.shutdown()
	}
	for _, p := range removed {
		<-p.done
	}
	return nil
}

// addPeer files id under addr and starts its writer; t.mu is held.
func (t *Transport) addPeer(id gpaxos.ID, addr string) {
	p := newPeer(t, id, addr)
	t.peers[id] = p
	go p.run()
}

// Peers returns a copy of the address book.
func (t *Transport) Peers() map[gpaxos.ID]string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[gpaxos.ID]string, len(t.peers))
	for id, p := range t.peers {
		p.mu.Lock()
		out[id] = p.addr
		p.mu.Unlock()
	}
	return out
}

// knows reports whether id is in the address book.
func (t *Transport) knows(id gpaxos.ID) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, ok := t.peers[id]
	return ok
}

// bookSize returns how many servers the address book holds.
func (t *Transport) bookSize() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.peers)
}

// Stats returns a snapshot of the counters.
func (t *Transport) Stats() Stats {
	s := t.stats.snapshot()
	t.mu.RLock()
	peers := maps.Clone(t.peers)
	t.mu.RUnlock()
	s.Peers = make(map[gpaxos.ID]PeerStats, len(peers))
	for id, p := range peers {
		s.Peers[id] = p.snapshot()
	}
	return s
}

// maxRecvBatch bounds the messages of one batch on Recv.
const maxRecvBatch = 4096

// dispatch is the one goroutine that hands received messages to Recv, once
// they are due and while the transport is not paused. While a batch waits
// for the receiver, what arrives stays in the inbox, which stays bounded,
// and goes in the next batch.
func (t *Transport) dispatch() {
	defer t.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		if gate := t.faults.gate(); !isClosed(gate) {
			select {
			case <-gate:
			case <-t.stop:
				return
			}
		}
		ms, next := t.inbox.popDue(time.Now(), maxRecvBatch)
		if len(ms) == 0 {
			var wake <-chan time.Time
			if !next.IsZero() {
				timer.Reset(time.Until(next))
				wake = timer.C
			}
			select {
			case <-t.inbox.kick:
			case <-wake:
			case <-t.stop:
				return
			}
			timer.Stop()
			continue
		}
		select {
		case t.recv <- ms:
			t.stats.delivered.Add(uint64(len(ms)))
		case <-t.stop:
			return
		}
	}
}

// Close stops listening, closes every connection, stops every goroutine of
// the transport and then closes the Recv channel. Queued and undelivered
// messages are dropped. Close is idempotent.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	peers := t.peers
	t.peers = map[gpaxos.ID]*peer{}
	conns := make([]net.Conn, 0, len(t.inbound))
	for c := range t.inbound {
		conns = append(conns, c)
	}
	t.mu.Unlock()

	close(t.stop)
	err := t.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	for _, p := range peers {
		p.shutdown()
	}
	for _, p := range peers {
		<-p.done
	}
	t.wg.Wait()
	close(t.recv)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
