package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The figures below are those `giraffe bench` reports, measured the same
// way and named the same in JSON, so that one summary reads the results
// of the three systems. They are written again here rather than imported:
// Giraffe's are in internal packages, and this module stays apart.

// maxLatency is the largest latency a histogram records.
const maxLatency = time.Minute

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on every Linux this runs on).
const clockTick = 10 * time.Millisecond

// newHistogram returns a histogram of latencies in microseconds, from
// 1 µs to a minute with three significant digits, as giraffe bench's.
func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(maxLatency/time.Microsecond), 3)
}

// Latencies are request latency percentiles in milliseconds.
type Latencies struct {
	Mean float64 `json:"mean"` // arithmetic mean
	P50  float64 `json:"p50"`  // median
	P90  float64 `json:"p90"`  // 90th percentile
	P99  float64 `json:"p99"`  // 99th percentile
	P999 float64 `json:"p999"` // 99.9th percentile
	Max  float64 `json:"max"`  // slowest request
}

// latenciesOf summarizes a histogram of microseconds.
func latenciesOf(h *hdrhistogram.Histogram) Latencies {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Latencies{Mean: h.Mean() / 1000, P50: ms(h.ValueAtQuantile(50)),
		P90: ms(h.ValueAtQuantile(90)), P99: ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max())}
}

// ServerCPU is the CPU time server processes used in a measured window:
// with the load generator on the servers' cores, the cost per operation
// is the figure that does not depend on how much of them it took.
type ServerCPU struct {
	PIDs    []int   `json:"pids"`
	Seconds float64 `json:"seconds"`   // user + system, all of them
	PerOpUs float64 `json:"per_op_us"` // Seconds / ops, in microseconds
}

// processCPU returns the user and system CPU time the processes pids
// have used since they started, every thread.
func processCPU(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, err
		}
		d, err := parseStatCPU(string(b))
		if err != nil {
			return 0, fmt.Errorf("process %d: %w", pid, err)
		}
		total += d
	}
	return total, nil
}

// parseStatCPU reads utime and stime from a /proc/PID/stat line. The
// command name, in parentheses, may hold spaces and parentheses: fields
// count from the last ')', where utime and stime are the 12th and 13th.
func parseStatCPU(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, fmt.Errorf("malformed stat %q", s)
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed stat %q", s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed stat %q", s)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// FsyncProbe is what a short probe measured of the disk the servers
// write to, just before the run: a neighbour's load can make the same disk
// several times slower, which a result read without it would blame on the
// server.
type FsyncProbe struct {
	Dir     string  `json:"dir"`               // where the probe wrote
	Syncs   int     `json:"syncs"`             // fdatasyncs timed
	P50Ms   float64 `json:"p50_ms"`            // median time of a 4 KiB write and its fdatasync
	P99Ms   float64 `json:"p99_ms"`            // 99th percentile
	MaxMs   float64 `json:"max_ms"`            // slowest
	Skipped string  `json:"skipped,omitempty"` // why the probe did not run, if it did not
}

// fsyncProbeSyncs is how many fdatasyncs the probe times, as giraffe
// bench's.
const fsyncProbeSyncs = 32

// probeFsync appends 4 KiB to a new file in dir and syncs it, n times,
// as a log append does, and reports the times.
func probeFsync(dir string, n int) FsyncProbe {
	p := FsyncProbe{Dir: dir}
	f, err := os.CreateTemp(dir, "etcd-peer-fsync-*")
	if err != nil {
		p.Skipped = err.Error()
		return p
	}
	defer os.Remove(f.Name())
	defer f.Close()
	p.Dir = filepath.Dir(f.Name())
	h := newHistogram()
	block := make([]byte, 4096)
	for range n {
		start := time.Now()
		if _, err := f.Write(block); err != nil {
			p.Skipped = err.Error()
			return p
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			p.Skipped = err.Error()
			return p
		}
		_ = h.RecordValue(time.Since(start).Microseconds())
	}
	l := latenciesOf(h)
	p.Syncs, p.P50Ms, p.P99Ms, p.MaxMs = n, l.P50, l.P99, l.Max
	return p
}
