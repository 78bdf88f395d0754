package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/internal/tlsconf"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// This file is TLS on the server's side: the secure client port, the
// identity (x509:<subject>) its clients' certificates give them, and the
// TLS configuration of the links between members.

// openTLS reads the key and trust stores the configuration names, so that
// a missing or unreadable file stops the server at start-up.
func (s *Server) openTLS() error {
	var err error
	if s.cfg.SecureClientPort > 0 {
		if s.clientTLS, err = tlsconf.New("ssl", s.cfg.ClientTLS, s.log); err != nil {
			return fmt.Errorf("secure client port: %w", err)
		}
	}
	if s.cfg.SSLQuorum && s.cfg.Replicated() {
		if s.quorumTLS, err = tlsconf.New("ssl.quorum", s.cfg.QuorumTLS, s.log); err != nil {
			return fmt.Errorf("sslQuorum: %w", err)
		}
	}
	return nil
}

// listenSecure opens the secure client port, when configured.
func (s *Server) listenSecure() error {
	if s.clientTLS == nil {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.SecureClientAddr, fmt.Sprint(s.cfg.SecureClientPort)))
	if err != nil {
		return fmt.Errorf("secure client port: %w", err)
	}
	s.secureLn = ln
	return nil
}

// SecureAddr returns the secure client listener's address, or nil when
// there is none.
func (s *Server) SecureAddr() net.Addr {
	if s.secureLn == nil {
		return nil
	}
	return s.secureLn.Addr()
}

// secureConn wraps a connection accepted on the secure client port; the
// handshake runs on the connection's own goroutine (tlsHandshake).
func (s *Server) secureConn(nc net.Conn) net.Conn {
	return tls.Server(nc, s.clientTLS.Server(remoteIP(nc)))
}

// closeNow closes nc at once. A TLS connection is closed under its TLS
// layer, without the close_notify alert: crypto/tls waits up to five
// seconds to send it to a client that does not read, and the callers
// (the server's shutdown, a connection past its outbox limit) must not
// wait; the ZooKeeper protocol, not TLS, says when a session ends.
func closeNow(nc net.Conn) error {
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.NetConn().Close()
	}
	return nc.Close()
}

// tlsHandshake runs the TLS handshake of a connection from the secure
// client port, before anything is read from it, and gives the connection
// the x509 id of the certificate its client presented (and the super id
// when that is the configured super user), as ZooKeeper's
// X509AuthenticationProvider does. It returns a close reason, or "" to go
// on; a client refused in the handshake (no certificate, or one the trust
// store does not accept, with clientAuth need) is logged.
func (c *conn) tlsHandshake() string {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return ""
	}
	if err := tc.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
		return "set deadline: " + err.Error()
	}
	if err := tc.Handshake(); err != nil {
		c.s.metrics.tlsHandshakeFailures.Inc()
		c.s.log.Warn("refusing TLS client: handshake failed", "remote", c.nc.RemoteAddr().String(),
			"clientAuth", c.s.cfg.ClientTLS.ClientAuth.String(), "err", err)
		return "TLS handshake failed"
	}
	// The writer sets its own deadlines; the reader's stays until the
	// ConnectRequest has come.
	tc.SetWriteDeadline(time.Time{})
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 {
		return ""
	}
	id, err := acl.X509ID(st.PeerCertificates[0].RawSubject)
	if err != nil {
		c.s.log.Warn("refusing TLS client: its certificate's subject does not parse", "remote",
			c.nc.RemoteAddr().String(), "err", err)
		return "bad certificate subject"
	}
	c.mu.Lock()
	if c.s.cfg.X509SuperUser != "" && id.ID == c.s.cfg.X509SuperUser {
		c.ids = addID(c.ids, acl.SuperID)
	}
	c.ids = addID(c.ids, id)
	c.mu.Unlock()
	c.s.log.Debug("TLS client authenticated", "remote", c.nc.RemoteAddr().String(), "id", id.Scheme+":"+id.ID)
	return ""
}

// authX509 answers an AuthPacket of scheme x509: the id comes from the
// certificate, never from the packet, so the client succeeds when its
// certificate gave it one and fails (AUTHFAILED, then the connection
// closes) otherwise, as ZooKeeper's X509AuthenticationProvider decides.
func (c *conn) authX509(xid zkproto.Xid) {
	for _, id := range c.authIDs() {
		if id.Scheme == "x509" {
			c.reply(xid, 0, zkproto.OK, nil)
			return
		}
	}
	c.s.log.Info("authentication failed", "remote", c.nc.RemoteAddr().String(), "scheme", "x509",
		"err", "no client certificate on this connection")
	c.reply(xid, 0, zkproto.ErrAuthFailed, nil)
	c.closeAfterFlush()
}
