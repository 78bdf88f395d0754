// Package server is a Giraffe server: it speaks the ZooKeeper client
// protocol on a TCP port, orders writes, applies them to the deterministic
// data tree, and answers reads from that tree. A standalone server orders
// writes through its own fsynced transaction log; an ensemble member
// through Group Paxos (internal/replica).
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
//
// Files by concern:
//
//   - server.go: the Server's life (New, Start, Close);
//   - config.go, zoocfg.go: Config and Ensemble; reading zoo.cfg;
//   - conns.go, conn.go, replyorder.go, requests.go, sessions.go,
//     fourletter.go, apply.go: the ZooKeeper front end (connections, the
//     order of their replies, requests, sessions, the four-letter words,
//     applying entries and firing watches);
//   - monitor.go, contact.go, fds_*.go: mntr's values (the members in
//     contact, the process's file descriptors);
//   - tls.go: the secure client port, the x509 ids its clients'
//     certificates give them, and the TLS of the links between members
//     (sslQuorum);
//   - pipeline.go, storage.go: the standalone orderer (log, fsync,
//     snapshots, recovery);
//   - replicated.go, owners.go, peers.go, peers_tcp.go: the ensemble
//     orderer (Group Paxos, session owners, the peer transport);
//   - namespaces.go, weak.go, weak_ensemble.go, nsstatus.go,
//     quarantine.go: namespaces, weak writes answered once ordered
//     (standalone and in an ensemble), each namespace's status, and the
//     namespaces a standalone server found damaged and serves no more;
//   - membership.go, reconfig.go, join.go: the ensemble's membership, the
//     changes the leader makes, and joining a running ensemble;
//   - admin.go, commands.go, backup.go, faults.go, metrics.go,
//     ensemble_metrics.go, latency.go: the read-only metrics port
//     (Prometheus metrics) and the authenticated admin port (package
//     adminapi's endpoints, fault injection, the snapshot command), both
//     with ZooKeeper's AdminServer commands.
package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/console"
	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/sessions"
	"github.com/giraffe-coord/giraffe/internal/tlsconf"
	"github.com/giraffe-coord/giraffe/internal/transport"
	"github.com/giraffe-coord/giraffe/internal/watch"
)

// Version is reported by srvr, stat and envi.
const Version = "3.9.4-giraffe-0.1"

// Server is one Giraffe server, standalone or an ensemble member.
type Server struct {
	cfg     Config
	log     *slog.Logger
	started time.Time

	treeMu sync.RWMutex
	tree   *datatree.Tree

	// membership is the ensemble's committed membership (membership.go).
	membership membershipState
	// clusterName is the ensemble's name in peer handshakes.
	clusterName string

	watchMu sync.Mutex
	watches *watch.Registry
	// liveWatches are the console's watch streams (console_watch.go).
	liveWatches *liveWatches

	connsMu    sync.Mutex
	conns      map[watch.WatcherID]*conn
	perIP      map[string]int
	bySession  map[int64]*conn
	nextConnID watch.WatcherID

	sessions *sessions.Tracker
	guard    *servingGuard     // an ensemble member's quorum contact (serving.go)
	contacts contacts          // when each member's touch last committed (contact.go)
	faults   *transport.Faults // an ensemble member's injected network faults
	latency  latencyStats
	journal  console.Journal // what the web console's timeline shows (console.go)
	pipe     orderer
	snaps    *snapshotter
	metrics  *metrics

	// nsDeclared is set once the tree has declared the configured
	// namespaces (namespaces.go); declaring is set while this server's
	// declaration is in flight.
	nsDeclared atomic.Bool
	declaring  atomic.Bool
	// answerEarly: weak writes are answered before they are applied
	// (weak.go).
	answerEarly bool
	// quar holds the namespaces this server quarantined (quarantine.go:
	// damaged on a standalone server's disk; divergence.go: differing
	// from the ensemble's majority); nil without namespaces.
	quar *quarantine

	ln        net.Listener // the plain client port; nil with NoClientPort
	secureLn  net.Listener // the secure client port (tls.go), or nil
	clientTLS *tlsconf.Source
	quorumTLS *tlsconf.Source
	metricsLn net.Listener
	metricsSv *http.Server
	adminLn   net.Listener
	adminSv   *http.Server

	// snapshotBusy is set while the snapshot command takes one (backup.go).
	snapshotBusy atomic.Bool

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
		cfg:         cfg,
		log:         logger,
		started:     time.Now(),
		watches:     watch.New(),
		liveWatches: newLiveWatches(),
		conns:       make(map[watch.WatcherID]*conn),
		perIP:       make(map[string]int),
		bySession:   make(map[int64]*conn),
		done:        make(chan struct{}),
		metrics:     newMetrics(),
	}
	if err := s.openTLS(); err != nil {
		return nil, err
	}
	switch weakModeOf(&cfg) {
	case WeakShortCircuit:
		s.answerEarly = true
	case WeakDynamicFsync:
		s.answerEarly = cfg.Replicated()
	}
	s.snaps = newSnapshotter(s)
	s.sessions = sessions.NewTracker(int64(s.cfg.ServerID), time.Now())
	s.guard = newServingGuard()
	if s.cfg.Replicated() {
		// The tree starts empty; the replica delivers the recovered
		// snapshot and the committed log before anything else.
		s.tree = datatree.New()
		s.tree.SetSnapshotSections(sectionNames(s.cfg.Namespaces))
		s.nsDeclared.Store(s.tree.Declares(s.cfg.Namespaces))
		if s.cfg.Namespaces.Len() > 0 {
			s.quar = newQuarantine(s.cfg.Namespaces)
		}
		rp, err := openReplica(s)
		if err != nil {
			return nil, err
		}
		s.pipe = rp
		s.metrics.register(s)
		return s, nil
	}
	tree, lg, quar, err := recoverState(&s.cfg, logger, &s.metrics.logWritten)
	if err != nil {
		return nil, err
	}
	s.tree, s.quar = tree, quar
	s.nsDeclared.Store(tree.Declares(s.cfg.Namespaces))
	for _, si := range tree.Sessions() {
		s.sessions.Add(si.ID, time.Duration(si.Timeout)*time.Millisecond, time.Now())
	}
	s.pipe = newPipeline(s, lg, tree.LastZxid())
	s.metrics.register(s)
	return s, nil
}

// Start listens on the client ports, plain and secure (and the metrics and
// admin ports), and serves until Close.
func (s *Server) Start() error {
	if s.cfg.ClientPort != NoClientPort {
		ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.ClientAddr, fmt.Sprint(s.cfg.ClientPort)))
		if err != nil {
			return err
		}
		s.ln = ln
	}
	err := s.listenSecure()
	if err == nil {
		err = s.startHTTP()
	}
	if err != nil {
		s.closeListeners()
		s.stopHTTP()
		return err
	}
	s.pipe.start()
	rp, replicated := s.pipe.(*replicated)
	if !replicated {
		// Before the first client is accepted: clients find the
		// declared roots from the start.
		if err := s.declareAtStart(); err != nil {
			s.Close()
			return err
		}
	}
	// Logged before the first connection is accepted, so a client that
	// was answered finds the line.
	attrs := []any{"client", addrString(s.ln), "secureClient", addrString(s.secureLn)}
	if s.secureLn != nil {
		attrs = append(attrs, "sslClientAuth", s.cfg.ClientTLS.ClientAuth.String())
	}
	attrs = append(attrs, "metrics", addrString(s.metricsLn), "admin", addrString(s.adminLn), "dataDir", s.cfg.DataDir,
		"zxid", fmt.Sprintf("0x%x", s.pipe.lastZxid()), "sessions", len(s.tree.Sessions()))
	if s.cfg.Namespaces.Len() > 0 {
		attrs = append(attrs, "namespaces", s.cfg.Namespaces.String())
	}
	s.log.Info("serving", attrs...)
	for _, ln := range []net.Listener{s.ln, s.secureLn} {
		if ln != nil {
			s.wg.Add(1)
			go s.acceptLoop(ln)
		}
	}
	s.wg.Add(4)
	go s.expiryLoop()
	go s.maintenanceLoop()
	go s.declareLoop()
	go s.seriesLoop()
	if replicated {
		s.wg.Add(1)
		go s.servingLoop(rp)
	}
	return nil
}

// Addr returns the client listener's address (after Start): the plain
// client port's, or the secure one's when there is no plain port.
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return s.SecureAddr()
	}
	return s.ln.Addr()
}

// closeListeners closes the client ports.
func (s *Server) closeListeners() {
	for _, ln := range []net.Listener{s.ln, s.secureLn} {
		if ln != nil {
			ln.Close()
		}
	}
}

// addrString is a listener's address, or "none".
func addrString(ln net.Listener) string {
	if ln == nil {
		return "none"
	}
	return ln.Addr().String()
}

// MetricsAddr returns the metrics listener's address, or nil.
func (s *Server) MetricsAddr() net.Addr {
	if s.metricsLn == nil {
		return nil
	}
	return s.metricsLn.Addr()
}

// AdminAddr returns the admin listener's address, or nil when the admin
// port is closed (no AdminPort or no AdminTokenFile).
func (s *Server) AdminAddr() net.Addr {
	if s.adminLn == nil {
		return nil
	}
	return s.adminLn.Addr()
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
		s.closeListeners()
		s.stopHTTP()
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

// ErrResync is the error a server stops with (Err) when it has found its
// own copy of a namespace differing from the majority's and marked its
// state to be received anew from the ensemble: started again with the
// same Config, it sets its state aside and rejoins as a new incarnation.
// `giraffe server` starts it again at once; a program embedding the
// server should do the same.
var ErrResync = errors.New("this member's state is to be received anew from the ensemble: start the server again")

// stopForResync stops the server with ErrResync (why says what diverged).
func (s *Server) stopForResync(why string) {
	err := fmt.Errorf("%w (%s)", ErrResync, why)
	if s.failErr.CompareAndSwap(nil, &err) {
		s.log.Warn("stopping to receive this member's state anew from the ensemble", "why", why)
		go s.Close()
	}
}

// fail stops the server after an error it cannot continue from (the log
// could not be written). Acknowledging anything after that could lose it.
func (s *Server) fail(err error) {
	if s.failErr.CompareAndSwap(nil, &err) {
		s.log.Error("fatal: stopping server", "err", err)
		go s.Close()
	}
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
