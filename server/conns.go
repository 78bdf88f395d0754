package server

import (
	"errors"
	"net"
	"time"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/internal/watch"
)

// This file is the server's table of client connections: accepting them
// (on the client ports, or handed over in-process), the per-address limit,
// and which connection holds which session.

// acceptLoop accepts client connections on ln, a client port, until the
// server closes. A connection from the secure client port is served over
// TLS (tls.go).
func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// Out of file descriptors and the like: back off, keep serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if ln == s.secureLn {
			nc = s.secureConn(nc)
		}
		s.admit(nc)
	}
}

// inProcessAddr stands for the client address of connections handed to
// ServeConn.
const inProcessAddr = "in-process"

// ServeConn serves one client connection that did not come through the
// client port: package embed hands it one end of an in-process pipe, so a
// program running the server talks to it with the same protocol, and the
// same semantics, as a remote client, without a network hop. The
// per-address connection limit does not apply. The server must have been
// started; after Close, nc is closed at once.
func (s *Server) ServeConn(nc net.Conn) { s.register(nc, inProcessAddr, false) }

// admit registers a new connection unless its IP is over the limit.
func (s *Server) admit(nc net.Conn) { s.register(nc, remoteIP(nc), true) }

// register adds a connection to the server's tables and starts serving
// it; with limit, a connection over the per-address limit is closed.
func (s *Server) register(nc net.Conn, ip string, limit bool) {
	s.connsMu.Lock()
	if s.closing.Load() {
		// Close has closed (or is closing) every registered connection
		// under this lock; one registered now would be missed.
		s.connsMu.Unlock()
		nc.Close()
		return
	}
	if limit && s.cfg.MaxClientCnxns > 0 && s.perIP[ip] >= s.cfg.MaxClientCnxns {
		s.connsMu.Unlock()
		s.log.Warn("too many connections from one address; closing the new one",
			"ip", ip, "max", s.cfg.MaxClientCnxns)
		s.metrics.connRejected.Inc()
		nc.Close()
		return
	}
	s.nextConnID++
	c := newConn(s, nc, s.nextConnID, ip)
	s.conns[c.id] = c
	s.perIP[ip]++
	s.connsMu.Unlock()
	c.start()
}

// forget removes a closed connection from the server's tables.
func (s *Server) forget(c *conn) {
	s.connsMu.Lock()
	if _, ok := s.conns[c.id]; ok {
		delete(s.conns, c.id)
		if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
			delete(s.perIP, c.ip)
		}
	}
	if sid := c.sessionID(); sid != 0 && s.bySession[sid] == c {
		delete(s.bySession, sid)
	}
	s.connsMu.Unlock()
	s.watchMu.Lock()
	s.watches.RemoveWatcher(c.id)
	s.watchMu.Unlock()
}

// attachSession makes c the connection of session sid, closing any other
// connection that held it (the client moved).
func (s *Server) attachSession(c *conn, sid int64) {
	s.connsMu.Lock()
	old := s.bySession[sid]
	s.bySession[sid] = c
	s.lowerBound(c, sid)
	s.connsMu.Unlock()
	if old != nil && old != c {
		old.close("session moved to another connection")
	}
}

// connOfSession returns the connection currently holding sid, if any.
func (s *Server) connOfSession(sid int64) *conn {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	return s.bySession[sid]
}

// connByID returns a live connection by its watcher id.
func (s *Server) connByID(id watch.WatcherID) *conn {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	return s.conns[id]
}

// remoteIP returns the client's address written as Java's
// getHostAddress writes it, which is what ZooKeeper's ip ids hold.
func remoteIP(nc net.Conn) string {
	if ip, ok := acl.HostAddress(nc.RemoteAddr().String()); ok {
		return ip
	}
	return nc.RemoteAddr().String()
}

// attachedSessions returns the sessions with a live connection here.
func (s *Server) attachedSessions() []int64 {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	ids := make([]int64, 0, len(s.bySession))
	for id := range s.bySession {
		ids = append(ids, id)
	}
	return ids
}
