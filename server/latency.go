package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// observeRequest records that a request of op was answered took after it
// was read: in srvr's and mntr's latency, in the Prometheus histogram of
// its operation and in the console's per-second samples.
func (s *Server) observeRequest(op zkproto.OpCode, took time.Duration) {
	s.latency.observe(took)
	s.metrics.requestSeconds.WithLabelValues(op.String()).Observe(took.Seconds())
	s.metrics.series.Request(isWrite(op), took)
}

// latencyStats keeps what srvr and mntr report as "Latency min/avg/max":
// the time from reading a request to queueing its reply, in milliseconds,
// since start or the last srst.
type latencyStats struct {
	mu    sync.Mutex
	count int64
	sum   time.Duration
	min   time.Duration
	max   time.Duration
}

// observe records one request's latency.
func (l *latencyStats) observe(d time.Duration) {
	l.mu.Lock()
	if l.count == 0 || d < l.min {
		l.min = d
	}
	if d > l.max {
		l.max = d
	}
	l.count++
	l.sum += d
	l.mu.Unlock()
}

// reset forgets everything observed so far.
func (l *latencyStats) reset() {
	l.mu.Lock()
	l.count, l.sum, l.min, l.max = 0, 0, 0, 0
	l.mu.Unlock()
}

// String formats min/avg/max as ZooKeeper does (ms, the average with one
// decimal).
func (l *latencyStats) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return "0/0.0/0"
	}
	avg := float64(l.sum) / float64(l.count) / float64(time.Millisecond)
	return fmt.Sprintf("%d/%.1f/%d", l.min.Milliseconds(), avg, l.max.Milliseconds())
}

// millis returns the minimum, mean and maximum latency in milliseconds
// (mntr's zk_min_latency, zk_avg_latency and zk_max_latency), zero
// before any request.
func (l *latencyStats) millis() (lo int64, avg float64, hi int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return 0, 0, 0
	}
	return l.min.Milliseconds(), float64(l.sum) / float64(l.count) / float64(time.Millisecond), l.max.Milliseconds()
}
