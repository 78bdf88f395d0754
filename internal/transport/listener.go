package transport

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// readBufferSize is the buffer of a connection reader.
const readBufferSize = 64 << 10

// acceptLoop accepts peers' connections until Close.
func (t *Transport) acceptLoop() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			if isClosed(t.stop) {
				return
			}
			// Out of file descriptors and the like: wait a little rather
			// than spin, and keep serving the connections already open.
			t.log.Warn("transport: accept failed", "err", err)
			select {
			case <-time.After(50 * time.Millisecond):
			case <-t.stop:
				return
			}
			continue
		}
		if !t.track(c) {
			c.Close()
			return
		}
		t.wg.Add(1)
		go t.serveInbound(c)
	}
}

// track registers an accepted connection so that Close can close it; false
// once closed.
func (t *Transport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.inbound[c] = gpaxos.None
	return true
}

func (t *Transport) untrack(c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.inbound, c)
}

// serveInbound runs the acceptor's side of the handshake, then reads
// messages from c until it breaks, delivering them to the inbox.
func (t *Transport) serveInbound(c net.Conn) {
	defer t.wg.Done()
	defer t.untrack(c)
	defer c.Close()
	remote := c.RemoteAddr().String()
	raw := c
	if t.cfg.TLS != nil {
		var err error
		if c, err = t.secureInbound(raw); err != nil {
			if !isClosed(t.stop) {
				t.stats.rejected.Add(1)
				t.log.Warn("transport: refused connection: TLS handshake failed", "remote", remote, "err", err)
			}
			return
		}
	}
	br := bufio.NewReaderSize(c, readBufferSize)
	from, err := t.acceptHandshake(c, raw, br)
	if err != nil {
		if !isClosed(t.stop) {
			t.log.Warn("transport: refused connection", "remote", remote, "err", err)
		}
		return
	}
	log := t.log.With("peer", uint64(from), "remote", remote)
	log.Debug("transport: accepted connection from peer")
	err = t.readLoop(c, br, from)
	switch {
	case isClosed(t.stop):
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		log.Debug("transport: connection from peer ended", "err", err)
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrFrameTooLarge), errors.Is(err, errProtocol):
		t.stats.connErrors.Add(1)
		log.Warn("transport: closing connection from peer", "reason", err)
	default:
		log.Info("transport: connection from peer broken", "err", err)
	}
}

// errProtocol is wrapped by the errors of messages that decode but do not
// belong on the connection.
var errProtocol = errors.New("transport: protocol violation")

// secureInbound runs the acceptor's side of the TLS handshake on raw.
func (t *Transport) secureInbound(raw net.Conn) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(raw.RemoteAddr().String())
	tc := tls.Server(raw, t.cfg.TLS.Server(host))
	if err := raw.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout)); err != nil {
		return nil, err
	}
	if err := tc.Handshake(); err != nil {
		return nil, err
	}
	return tc, nil
}

// acceptHandshake reads and checks the hello on c and answers it; raw is
// the TCP connection under c (c itself without TLS), under which the
// transport tracks it.
func (t *Transport) acceptHandshake(c, raw net.Conn, br *bufio.Reader) (gpaxos.ID, error) {
	if err := c.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout)); err != nil {
		return 0, err
	}
	frame, err := readFrame(br, maxHandshakeFrame)
	if err != nil {
		return 0, fmt.Errorf("reading hello: %w", err)
	}
	h, err := decodeHello(frame)
	if err != nil {
		// Not a Giraffe peer (or another version): no answer it could read.
		t.stats.rejected.Add(1)
		return 0, err
	}
	reason := t.checkHello(h)
	a := ack{Reason: reason}.encode()
	if _, err := c.Write(append(appendFrameHeader(nil, len(a)), a...)); err != nil {
		return 0, err
	}
	if reason != "" {
		t.stats.rejected.Add(1)
		return 0, fmt.Errorf("%w: peer %d: %s", ErrRejected, h.From, reason)
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return 0, err
	}
	// A new connection from a peer replaces its previous one: the peer has
	// one writer, so the old connection is dead or about to be (the peer
	// restarted, or its writer redialed after an error it saw first).
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return 0, net.ErrClosed
	}
	var old []net.Conn
	for oc, id := range t.inbound {
		if id == h.From && oc != raw {
			old = append(old, oc)
		}
	}
	t.inbound[raw] = h.From
	learned := t.learnPeer(h, raw.RemoteAddr())
	t.mu.Unlock()
	for _, oc := range old {
		oc.Close()
	}
	if learned != "" {
		t.cfg.Logger.Info("transport: learned the address of a peer missing from the address book", "peer", h.From, "addr", learned)
	}
	t.stats.accepted.Add(1)
	return h.From, nil
}

// checkHello returns why h is refused, or "" to accept it.
func (t *Transport) checkHello(h hello) string {
	switch {
	case h.Cluster != t.cfg.Cluster:
		return fmt.Sprintf("cluster %q, this server belongs to %q", h.Cluster, t.cfg.Cluster)
	case h.Namespaces != t.cfg.Namespaces.Hash():
		theirs := h.NamespacesText
		if h.Namespaces == 0 {
			theirs = "none"
		}
		return fmt.Sprintf("namespace tables differ: server %d declares %s (hash %#x), server %d declares %s (hash %#x)",
			h.From, theirs, h.Namespaces, t.cfg.ID, t.cfg.Namespaces, t.cfg.Namespaces.Hash())
	case h.To != t.cfg.ID:
		return fmt.Sprintf("dialed server %d, reached server %d", h.To, t.cfg.ID)
	case h.From == gpaxos.None || h.From == t.cfg.ID:
		return fmt.Sprintf("invalid sender ID %d", h.From)
	case !t.cfg.AcceptUnknownPeers && !t.knows(h.From):
		return fmt.Sprintf("server %d is not in the address book of server %d", h.From, t.cfg.ID)
	case !t.knows(h.From) && t.bookSize() >= t.cfg.MaxPeers:
		return fmt.Sprintf("server %d is not in the address book of server %d, which holds %d servers already (the most it learns from handshakes)",
			h.From, t.cfg.ID, t.cfg.MaxPeers)
	}
	return ""
}

// learnPeer adds an unknown dialer to the address book, at the address its
// hello names (with the connection's source host when the hello names an
// unspecified one, as a wildcard listener does), and returns that address;
// "" when the dialer is known, unknown peers are refused, or the hello
// names no usable address. t.mu is held.
func (t *Transport) learnPeer(h hello, remote net.Addr) string {
	if _, ok := t.peers[h.From]; ok || !t.cfg.AcceptUnknownPeers || h.Addr == "" || len(t.peers) >= t.cfg.MaxPeers {
		return ""
	}
	host, port, err := net.SplitHostPort(h.Addr)
	if err != nil || port == "" || port == "0" {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		rhost, _, err := net.SplitHostPort(remote.String())
		if err != nil {
			return ""
		}
		host = rhost
	}
	addr := net.JoinHostPort(host, port)
	t.addPeer(h.From, addr)
	return addr
}

// readLoop decodes frames from a handshaken connection until it fails.
func (t *Transport) readLoop(c net.Conn, br *bufio.Reader, from gpaxos.ID) error {
	asm := assembler{limit: t.cfg.MaxMessageSize}
	for {
		size, err := readFrameHeader(br, t.cfg.MaxFrameSize)
		if err != nil {
			return err
		}
		// Whole messages and the chunks of one snapshot-carrying message
		// interleave (see bulkMsg).
		var frame []byte
		if kind := chunkKind(br, size); kind != 0 {
			if frame, err = asm.read(br, kind, size-1); err != nil {
				return err
			}
			if frame == nil {
				continue // more chunks to come
			}
		} else if frame, err = readFrameBody(br, size); err != nil {
			return err
		}
		m, err := Decode(frame)
		if err != nil {
			return err
		}
		if m.From != from || m.To != t.cfg.ID {
			return fmt.Errorf("%w: message %v from %d to %d on the connection of %d to %d",
				errProtocol, m.Type, m.From, m.To, from, t.cfg.ID)
		}
		size = frameHeaderSize + len(frame)
		t.stats.received.Add(1)
		t.stats.receivedBytes.Add(uint64(size))
		due, r := t.faults.route(In, from, time.Now())
		if r != dropNone {
			t.stats.drop(r, 1)
			continue
		}
		if m.Snapshot != nil {
			due = t.faults.holdSnapshot(from, due)
		}
		if !t.inbox.push(m, size, due, t.stop) {
			return net.ErrClosed
		}
	}
}
