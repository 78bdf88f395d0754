package sim

import (
	"os"
	"runtime/debug"
)

// LightGC lets the heap grow to five times its live size between
// collections (GOGC=400) unless GOGC says otherwise. A run allocates
// messages, entries and events at a high rate and keeps little of them,
// so with the default target much of its CPU time goes to collecting
// garbage; the larger target costs a few tens of megabytes per run.
// Programs and tests that run the simulator call it once, at start.
func LightGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}
