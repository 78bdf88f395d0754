package server

import (
	"fmt"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/transport"
	"github.com/prometheus/client_golang/prometheus"
)

// ensembleCollector exports an ensemble member's place in the protocol
// when scraped: its role, epoch and leader, how far it has logged,
// committed and applied, and the state of its links to the other members.
// A standalone server exports its role alone.
type ensembleCollector struct{ s *Server }

var (
	roleDesc = prometheus.NewDesc("giraffe_role",
		"1 for this server's role (standalone, leader, coordinator or acceptor), 0 for the others.", []string{"role"}, nil)
	epochDesc = prometheus.NewDesc("giraffe_epoch",
		"The global epoch whose history this member's log follows.", nil, nil)
	promisedDesc = prometheus.NewDesc("giraffe_promised_epoch",
		"The highest global epoch this member promised; above giraffe_epoch while an election is under way.", nil, nil)
	leaderDesc = prometheus.NewDesc("giraffe_leader",
		"The id of the global leader this member follows (0: none known).", nil, nil)
	groupDesc = prometheus.NewDesc("giraffe_group",
		"The Group Paxos group (tree of the forest) this member belongs to.", nil, nil)
	logZxidDesc = prometheus.NewDesc("giraffe_log_zxid",
		"The zxid of the last entry in this member's log.", nil, nil)
	commitZxidDesc = prometheus.NewDesc("giraffe_commit_zxid",
		"The commit point this member knows of (the leader's, as last heard).", nil, nil)
	applyLagDesc = prometheus.NewDesc("giraffe_apply_lag_entries",
		"Entries this member knows committed but has not applied yet.", nil, nil)
	lagSecondsDesc = prometheus.NewDesc("giraffe_lag_seconds",
		"How far behind real time the state this member has applied may be: the age of the newest of its own touch entries it has applied (it proposes one every few milliseconds; -1 until one has).", nil, nil)
	resentDesc = prometheus.NewDesc("giraffe_proposals_resent_total",
		"This member's proposals sent to the leader again because none of them committed for a resend interval (lost messages, a slow or changing leader).", nil, nil)
	peerConnectedDesc = prometheus.NewDesc("giraffe_peer_connected",
		"1 while the outgoing link to the peer is established, else 0.", []string{"peer"}, nil)
	peerQueuedDesc = prometheus.NewDesc("giraffe_peer_queued_messages",
		"Messages waiting to be written to the peer.", []string{"peer"}, nil)
	peerDroppedDesc = prometheus.NewDesc("giraffe_peer_dropped_messages_total",
		"Messages to the peer dropped before they were written.", []string{"peer"}, nil)
	peerConnectsDesc = prometheus.NewDesc("giraffe_peer_connects_total",
		"Outgoing connections established to the peer.", []string{"peer"}, nil)
	peerMessagesDesc = prometheus.NewDesc("giraffe_peer_messages_total",
		"Protocol messages written to peers (sent) and decoded from them (received), all peers together.", []string{"direction"}, nil)
	peerBytesDesc = prometheus.NewDesc("giraffe_peer_bytes_total",
		"Bytes of those messages, framing included.", []string{"direction"}, nil)
)

var roles = []string{"standalone", string(replica.RoleLeader), string(replica.RoleCoordinator), string(replica.RoleAcceptor)}

// Describe sends every metric's description.
func (e ensembleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{roleDesc, epochDesc, promisedDesc, leaderDesc, groupDesc, logZxidDesc,
		commitZxidDesc, applyLagDesc, lagSecondsDesc, resentDesc, peerConnectedDesc, peerQueuedDesc, peerDroppedDesc, peerConnectsDesc,
		peerMessagesDesc, peerBytesDesc} {
		ch <- d
	}
}

// Collect reads the replica's status and the transport's counters.
func (e ensembleCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	_, role := e.s.modeAndRole()
	for _, r := range roles {
		v := 0.0
		if r == role {
			v = 1
		}
		gauge(roleDesc, v, r)
	}
	rp, ok := e.s.pipe.(*replicated)
	if !ok {
		return
	}
	st := rp.rep.Status()
	gauge(epochDesc, float64(st.Epoch))
	gauge(promisedDesc, float64(st.HardState.Promised))
	gauge(leaderDesc, float64(st.Leader))
	gauge(groupDesc, float64(st.Group))
	gauge(logZxidDesc, float64(st.Last))
	gauge(commitZxidDesc, float64(st.Commit))
	gauge(applyLagDesc, float64(zxidDistance(st.Applied, st.Commit)))
	gauge(lagSecondsDesc, e.s.lag().Seconds())
	ch <- prometheus.MustNewConstMetric(resentDesc, prometheus.CounterValue, float64(st.ProposalsResent))
	ts, ok := rp.transport.(interface{ Stats() transport.Stats })
	if !ok {
		return
	}
	stats := ts.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(peerMessagesDesc, stats.Sent, "sent")
	counter(peerMessagesDesc, stats.Received, "received")
	counter(peerBytesDesc, stats.SentBytes, "sent")
	counter(peerBytesDesc, stats.ReceivedBytes, "received")
	for id, p := range stats.Peers {
		peer := fmt.Sprint(id)
		connected := 0.0
		if p.Connected {
			connected = 1
		}
		gauge(peerConnectedDesc, connected, peer)
		gauge(peerQueuedDesc, float64(p.Queued), peer)
		counter(peerDroppedDesc, p.Dropped, peer)
		counter(peerConnectsDesc, p.Connects, peer)
	}
}

// zxidDistance counts the entries after from up to to: within an epoch the
// counters' difference; across epochs, to's counter (the entries of its
// epoch), which is a lower bound, as the entries left of earlier epochs
// are not known here.
func zxidDistance(from, to gpaxos.Zxid) uint64 {
	switch {
	case to <= from:
		return 0
	case to.Epoch() == from.Epoch():
		return uint64(to.Counter() - from.Counter())
	}
	return uint64(to.Counter())
}

// noteStatus counts elections from the replica's status changes (it runs
// on the replica's goroutine, the only one to touch electingSince): one
// begins when this member promises an epoch above the one it follows, and
// ends when it follows a newer epoch. giraffe_elections_total counts the
// epochs it came to follow, giraffe_election_seconds how long each took
// from its promise.
func (s *Server) noteStatus(prev, cur replica.Status) {
	m := s.metrics
	now := time.Now()
	if cur.HardState.Promised > cur.Epoch && m.electingSince.IsZero() {
		m.electingSince = now
	}
	if cur.Epoch > prev.Epoch {
		m.elections.Inc()
		if !m.electingSince.IsZero() {
			m.electionSeconds.Observe(now.Sub(m.electingSince).Seconds())
			m.electingSince = time.Time{}
		}
	}
	if cur.Leader != prev.Leader {
		m.leaderChanges.Inc()
	}
}
