package server

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/giraffe-coord/giraffe/internal/console"
)

// metrics are the server's Prometheus metrics, in a registry of its own so
// that several servers can live in one process (tests, embedded use).
type metrics struct {
	reg             *prometheus.Registry
	requests        *prometheus.CounterVec
	requestSeconds  *prometheus.HistogramVec
	badInput        prometheus.Counter
	connections     prometheus.Gauge
	connRejected    prometheus.Counter
	applied         prometheus.Counter
	fsyncSeconds    prometheus.Histogram
	batchSize       prometheus.Histogram
	sessionsCreated prometheus.Counter
	sessionsExpired prometheus.Counter
	snapshots       prometheus.Counter
	// logWritten counts the bytes of the records appended to this
	// server's log (standalone or replica): wal.Options.Written.
	logWritten atomic.Uint64

	// Elections (ensemble_metrics.go); electingSince is owned by the
	// replica's goroutine.
	elections       prometheus.Counter
	electionSeconds prometheus.Histogram
	leaderChanges   prometheus.Counter
	electingSince   time.Time

	// tlsHandshakeFailures counts clients refused in the TLS handshake
	// of the secure client port.
	tlsHandshakeFailures prometheus.Counter

	// Weak namespaces (weak.go).
	weakEarly    prometheus.Counter
	weakEarlyNS  *prometheus.CounterVec // weakEarly by namespace root
	divergences  *prometheus.CounterVec // members' namespace copies found differing (divergence.go)
	weakMismatch prometheus.Counter
	weakLost     prometheus.Counter

	// series is the load second by second for the web console's charts
	// (console.go).
	series *console.Recorder
}

func newMetrics() *metrics {
	m := &metrics{
		reg:    prometheus.NewRegistry(),
		series: console.NewRecorder(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "giraffe_requests_total", Help: "Client requests received, by opcode.",
		}, []string{"op"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "giraffe_request_seconds", Help: "Time from reading a client request to queueing its reply, by opcode.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"op"}),
		badInput: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_bad_input_total", Help: "Frames rejected as malformed, oversized or of an unknown opcode.",
		}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "giraffe_connections", Help: "Open client connections.",
		}),
		connRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_connections_rejected_total", Help: "Connections refused by the per-IP limit.",
		}),
		tlsHandshakeFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_tls_handshake_failures_total", Help: "Clients of the secure client port refused in the TLS handshake.",
		}),
		applied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_entries_applied_total", Help: "Log entries applied to the data tree.",
		}),
		fsyncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "giraffe_fsync_seconds", Help: "Time to fsync one batch of log entries.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "giraffe_fsync_batch_entries", Help: "Log entries made durable by one fsync.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		sessionsCreated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_sessions_created_total", Help: "Sessions created.",
		}),
		sessionsExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_sessions_expired_total", Help: "Sessions closed by expiry.",
		}),
		snapshots: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_snapshots_total", Help: "Snapshots written.",
		}),
		elections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_elections_total", Help: "Global epochs this member came to follow (elections it saw complete).",
		}),
		electionSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "giraffe_election_seconds", Help: "Time from this member's promise to a new epoch until it follows that epoch.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_leader_changes_total", Help: "Changes of the global leader this member follows.",
		}),
		weakEarly: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_weak_early_replies_total",
			Help: "Weak writes answered once ordered, before they were durable on a quorum and applied.",
		}),
		weakEarlyNS: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "giraffe_namespace_weak_early_replies_total",
			Help: "Weak writes answered once ordered, by namespace root (giraffe_weak_early_replies_total is their sum).",
		}, []string{"ns"}),
		divergences: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "giraffe_namespace_divergences_total",
			Help: "Members whose digest of a namespace at a checkpoint differed from the majority's, by namespace root.",
		}, []string{"ns"}),
		weakMismatch: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_weak_mismatch_total",
			Help: "Weak writes answered early with another result than the one they had once applied (must stay 0).",
		}),
		weakLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "giraffe_weak_possibly_lost_total",
			Help: "Weak writes answered early whose requests this server gave up on before seeing them commit (a leader change).",
		}),
	}
	m.reg.MustRegister(m.requests, m.requestSeconds, m.badInput, m.connections, m.connRejected, m.tlsHandshakeFailures, m.applied,
		m.fsyncSeconds, m.batchSize, m.sessionsCreated, m.sessionsExpired, m.snapshots,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "giraffe_log_bytes_written_total",
			Help: "Bytes of the records appended to this server's transaction log (headers and payloads; every entry of an ensemble member's replicated log, and its own touch entries listing the sessions connected to it).",
		}, func() float64 { return float64(m.logWritten.Load()) }),
		m.elections, m.electionSeconds, m.leaderChanges,
		m.weakEarly, m.weakEarlyNS, m.weakMismatch, m.weakLost, m.divergences,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observeSync records one fsync of the log: how long it took and how many
// entries it made durable (the standalone pipeline's and an ensemble
// member's replica alike).
func (m *metrics) observeSync(entries int, took time.Duration) {
	m.fsyncSeconds.Observe(took.Seconds())
	m.batchSize.Observe(float64(entries))
	m.series.Sync(entries, took)
}

// register adds the gauges that read the server's state when scraped.
func (m *metrics) register(s *Server) {
	withTree := func(f func() float64) func() float64 {
		return func() float64 {
			s.treeMu.RLock()
			defer s.treeMu.RUnlock()
			return f()
		}
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "giraffe_znodes", Help: "Znodes in the data tree."},
			withTree(func() float64 { return float64(s.tree.NodeCount()) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "giraffe_ephemerals", Help: "Ephemeral znodes."},
			withTree(func() float64 { return float64(s.tree.EphemeralCount()) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "giraffe_data_bytes", Help: "Approximate size of znode data and paths."},
			withTree(func() float64 { return float64(s.tree.ApproximateDataSize()) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "giraffe_last_zxid", Help: "Last applied zxid."},
			withTree(func() float64 { return float64(s.pipe.lastZxid()) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "giraffe_serving",
			Help: "1 while the server serves clients (an ensemble member: in contact with a quorum and a member), else 0."},
			func() float64 {
				if s.serving() {
					return 1
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "giraffe_sessions", Help: "Live sessions."},
			func() float64 { return float64(s.sessions.Count()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "giraffe_sessions_connected", Help: "Sessions connected to this server."},
			func() float64 {
				s.connsMu.Lock()
				defer s.connsMu.Unlock()
				return float64(len(s.bySession))
			}),
		ensembleCollector{s},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "giraffe_watches", Help: "Registered watches."},
			func() float64 {
				s.watchMu.Lock()
				defer s.watchMu.Unlock()
				return float64(s.watches.Count())
			}),
		newNamespaceCollector(s),
	)
}

func (m *metrics) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	return mux
}
