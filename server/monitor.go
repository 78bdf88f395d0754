package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/members"
)

// monitorValue is one of the values mntr reports, under ZooKeeper's name
// without its "zk_" prefix (the AdminServer's monitor command uses the
// bare names as JSON keys).
type monitorValue struct {
	key   string
	value any // string, int64 or float64
}

// monitorValues returns what mntr reports, in the order of ZooKeeper
// 3.5's MonitorCommand, whose keys monitoring tools (Datadog's and
// Nagios' ZooKeeper checks) read, then the ones ZooKeeper added later.
// The leader adds followers (and learners, ZooKeeper 3.6's name for the
// same count): the other members of the committed membership;
// synced_followers: those whose own touch entry committed here within
// minSessionTimeout, so that synced_followers < followers names a member
// cut off, stopped or far behind; pending_syncs: this server's clients'
// syncs waiting for their place in the log.
func (s *Server) monitorValues() []monitorValue {
	mode, _ := s.modeAndRole()
	conns, rcv, snt := s.stats()
	lo, avg, hi := s.latency.millis()
	s.treeMu.RLock()
	nodes, eph, size := s.tree.NodeCount(), s.tree.EphemeralCount(), s.tree.ApproximateDataSize()
	s.treeMu.RUnlock()
	s.watchMu.Lock()
	watches := s.watches.Count()
	s.watchMu.Unlock()
	i := func(n int) int64 { return int64(n) }
	vs := []monitorValue{
		{"version", Version},
		{"avg_latency", avg},
		{"max_latency", hi},
		{"min_latency", lo},
		{"packets_received", rcv},
		{"packets_sent", snt},
		{"num_alive_connections", i(conns)},
		{"outstanding_requests", i(s.pipe.queued())},
		{"server_state", mode},
		{"znode_count", i(nodes)},
		{"watch_count", i(watches)},
		{"ephemerals_count", i(eph)},
		{"approximate_data_size", int64(size)},
	}
	if open, limit, ok := fileDescriptors(); ok {
		vs = append(vs, monitorValue{"open_file_descriptor_count", int64(open)},
			monitorValue{"max_file_descriptor_count", int64(min(limit, math.MaxInt64))})
	}
	if rp, ok := s.pipe.(*replicated); ok && mode == "leader" {
		m, _, _ := s.membership.get()
		var others []members.ID
		for _, x := range m.Members {
			if x.ID != s.cfg.ServerID {
				others = append(others, x.ID)
			}
		}
		synced := s.contacts.inContact(others, time.Now(), s.contactWindow())
		vs = append(vs, monitorValue{"followers", i(len(others))}, monitorValue{"learners", i(len(others))},
			monitorValue{"synced_followers", i(synced)}, monitorValue{"pending_syncs", i(rp.pendingSyncs())})
	}
	return append(vs, monitorValue{"global_sessions", i(s.sessions.Count())},
		monitorValue{"uptime", time.Since(s.started).Milliseconds()})
}

// writeMntr writes mntr's answer: "zk_" key, a tab, the value, a line
// each.
func (s *Server) writeMntr(b *strings.Builder) {
	for _, v := range s.monitorValues() {
		fmt.Fprintf(b, "zk_%s\t%s\n", v.key, monitorText(v.value))
	}
}

// monitorText formats a value as ZooKeeper's mntr does: integers plainly,
// other numbers as Java's Double.toString (always with a fraction).
func monitorText(v any) string {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e7 {
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		return v
	}
	return fmt.Sprint(v)
}
