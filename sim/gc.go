package sim

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// LightGC lets the heap grow to five times its live size between
// collections (GOGC=400) unless GOGC says otherwise. A run allocates
// messages, entries and events at a high rate and keeps little of them,
// so with the default target much of its CPU time goes to collecting
// garbage; the larger target costs a few tens of megabytes per run. Runs
// of hundreds of servers keep gigabytes live, where five times as much
// would not fit: unless GOMEMLIMIT says otherwise, the heap is also held
// to half the machine's memory, past which the collector works harder
// instead. Programs and tests that run the simulator call it once, at
// start.
func LightGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := memTotal(); total > 0 {
			debug.SetMemoryLimit(total / 2)
		}
	}
}

// memTotal is the machine's memory in bytes from /proc/meminfo, or 0
// where there is none.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
