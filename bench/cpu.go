package bench

import (
	"fmt"
	"time"

	"github.com/giraffe-coord/giraffe/internal/cpuquota"
)

// processCPU returns the CPU time, user and system, that the processes
// pids have used since they started (every thread). The server's own CPU
// per operation is the honest figure on a machine whose cores the load
// generator shares: it does not depend on how much of them the generator
// takes.
func processCPU(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		d, err := cpuquota.ProcessCPU(pid)
		if err != nil {
			return 0, fmt.Errorf("bench: CPU of process %d: %w", pid, err)
		}
		total += d
	}
	return total, nil
}
