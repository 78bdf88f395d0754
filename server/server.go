// Package server is a standalone Giraffe server: it speaks the ZooKeeper
// client protocol on a TCP port, orders writes through a fsynced
// transaction log, applies them to the deterministic data tree, and answers
// reads from that tree.
//
// Concurrency: each connection has a reader goroutine (decodes requests,
// answers reads inline when nothing it sent earlier is still in flight) and a
// writer goroutine (flushes the connection's outbox). Writes pass through a
// two-stage pipeline, logger (append + one fsync per batch) then applier
// (apply in zxid order, trigger watches, queue replies), so the log of batch
// k+1 is written while batch k is applied. The tree is guarded by one
// RWMutex: the applier holds it exclusively while it applies a batch, readers
// share it. Lock order: tree, then watch registry, then a connection's
// outbox.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/transport"
	"github.com/giraffe-coord/giraffe/internal/watch"
)

// Version is reported by srvr, stat and envi.
const Version = "3.9.4-giraffe-0.1"

// Server is one standalone Giraffe server.
type Server struct {
	cfg     Config
	log     *slog.Logger
	started time.Time

	treeMu sync.RWMutex
	tree   *datatree.Tree

	// members is the ensemble's committed membership (admin.go).
	members memberState
	// clusterName is the ensemble's name in peer handshakes.
	clusterName string

	watchMu sync.Mutex
	watches *watch.Registry

	connsMu    sync.Mutex
	conns      map[watch.WatcherID]*conn
	perIP      map[string]int
	bySession  map[int64]*conn
	nextConnID watch.WatcherID

	sessions *sessionTracker
	guard    *servingGuard     // an ensemble member's quorum contact (serving.go)
	faults   *transport.Faults // an ensemble member's injected network faults
	latency  latencyStats
	pipe     orderer
	snaps    *snapshotter
	metrics  *metrics

	ln        net.Listener
	metricsLn net.Listener
	metricsSv *http.Server

	closing   atomic.Bool
	closeOnce sync.Once
	done      chan struct{}
	wg        sync.WaitGroup
	failErr   atomic.Pointer[error]
}

// New validates cfg and recovers the state in its data directory (newest
// valid snapshot plus the log after it). It does not listen yet.
func New(cfg Config, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{
		cfg:       cfg,
		log:       logger,
		started:   time.Now(),
		watches:   watch.New(),
		conns:     make(map[watch.WatcherID]*conn),
		perIP:     make(map[string]int),
		bySession: make(map[int64]*conn),
		done:      make(chan struct{}),
		metrics:   newMetrics(),
	}
	s.snaps = newSnapshotter(s)
	s.sessions = newSessionTracker(s.cfg.ServerID, time.Now())
	s.guard = newServingGuard()
	if s.cfg.Replicated() {
		// The tree starts empty; the replica delivers the recovered
		// snapshot and the committed log before anything else.
		s.tree = datatree.New()
		rp, err := openReplica(s)
		if err != nil {
			return nil, err
		}
		s.pipe = rp
		s.metrics.register(s)
		return s, nil
	}
	tree, lg, err := recoverState(&s.cfg, logger)
	if err != nil {
		return nil, err
	}
	s.tree = tree
	for _, si := range tree.Sessions() {
		s.sessions.add(si.ID, time.Duration(si.Timeout)*time.Millisecond, time.Now())
	}
	s.pipe = newPipeline(s, lg, tree.LastZxid())
	s.metrics.register(s)
	return s, nil
}

// Start listens on the client port (and the metrics port) and serves until
// Close.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.ClientAddr, fmt.Sprint(s.cfg.ClientPort)))
	if err != nil {
		return err
	}
	s.ln = ln
	if s.cfg.MetricsPort > 0 {
		mln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.ClientAddr, fmt.Sprint(s.cfg.MetricsPort)))
		if err != nil {
			ln.Close()
			return err
		}
		s.metricsLn = mln
		mux := http.NewServeMux()
		mux.Handle("/metrics", s.metrics.handler())
		mux.HandleFunc("/faults", s.faultsHandler)
		mux.HandleFunc("/membership", s.membershipHandler)
		mux.HandleFunc("/join", s.joinHandler)
		mux.HandleFunc("/leave", s.leaveHandler)
		s.metricsSv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.metricsSv.Serve(mln) }()
	}
	s.pipe.start()
	s.wg.Add(3)
	go s.acceptLoop()
	go s.expiryLoop()
	go s.maintenanceLoop()
	if rp, ok := s.pipe.(*replicated); ok {
		s.wg.Add(1)
		go s.servingLoop(rp)
	}
	s.log.Info("serving", "client", ln.Addr().String(), "dataDir", s.cfg.DataDir,
		"zxid", fmt.Sprintf("0x%x", s.pipe.lastZxid()), "sessions", len(s.tree.Sessions()))
	return nil
}

// Addr returns the client listener's address (after Start).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// MetricsAddr returns the metrics listener's address, or nil.
func (s *Server) MetricsAddr() net.Addr {
	if s.metricsLn == nil {
		return nil
	}
	return s.metricsLn.Addr()
}

// Done is closed when the server has stopped (Close, or a fatal error).
func (s *Server) Done() <-chan struct{} { return s.done }

// Err returns the fatal error that stopped the server, if any.
func (s *Server) Err() error {
	if p := s.failErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Close stops accepting, closes every connection, drains the pipeline and
// closes the log. Sessions survive: they expire later unless their clients
// come back after a restart.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		if s.ln != nil {
			s.ln.Close()
		}
		if s.metricsSv != nil {
			s.metricsSv.Shutdown(context.Background())
		}
		s.connsMu.Lock()
		for _, c := range s.conns {
			c.close("server shutting down")
		}
		s.connsMu.Unlock()
		close(s.done)
		s.pipe.stop()
		s.wg.Wait()
		s.snaps.wait()
	})
	return s.Err()
}

// fail stops the server after an error it cannot continue from (the log
// could not be written). Acknowledging anything after that could lose it.
func (s *Server) fail(err error) {
	if s.failErr.CompareAndSwap(nil, &err) {
		s.log.Error("fatal: stopping server", "err", err)
		go s.Close()
	}
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		nc, err := s.ln.Accept()
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

// isLeader reports whether this server makes the ensemble-wide decisions
// (session expiry, reaping containers and TTL nodes): the global leader of
// an ensemble, or a standalone server.
func (s *Server) isLeader() bool {
	rp, ok := s.pipe.(*replicated)
	return !ok || rp.rep.Status().Role == replica.RoleLeader
}

// waitApplied returns the last applied zxid once it reaches z. A client
// that reconnects after seeing z elsewhere in the ensemble must not be
// served older state, so a member that lags waits a little to catch up
// (standalone servers never lag: they answer at once).
func (s *Server) waitApplied(z int64) int64 {
	deadline := time.Now().Add(2 * time.Second)
	for {
		s.treeMu.RLock()
		last := s.pipe.lastZxid()
		s.treeMu.RUnlock()
		if last >= z || !s.cfg.Replicated() || time.Now().After(deadline) || s.closing.Load() {
			return last
		}
		time.Sleep(5 * time.Millisecond)
	}
}
