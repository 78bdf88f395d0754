package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// processCPU returns the CPU time, user and system, that the processes
// pids have used since they started (every thread, from /proc/PID/stat).
// The server's own CPU per operation is the honest figure on a machine
// whose cores the load generator shares: it does not depend on how much
// of them the generator takes.
func processCPU(pids []int) (time.Duration, error) {
	hz := clockTicks()
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, fmt.Errorf("bench: CPU of process %d: %w", pid, err)
		}
		// The command name, in parentheses, may hold spaces: the fields
		// counted from 3 (state) follow its closing parenthesis.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			return 0, fmt.Errorf("bench: /proc/%d/stat unreadable", pid)
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			return 0, fmt.Errorf("bench: /proc/%d/stat has %d fields", pid, len(f)+2)
		}
		utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
		stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
		if err := errors.Join(err1, err2); err != nil {
			return 0, fmt.Errorf("bench: /proc/%d/stat: %w", pid, err)
		}
		total += time.Duration(utime+stime) * time.Second / time.Duration(hz)
	}
	return total, nil
}

// clockTicks returns the kernel's clock ticks per second (sysconf's
// _SC_CLK_TCK), which /proc counts CPU time in: the AT_CLKTCK entry of
// the auxiliary vector, 100 when it cannot be read.
func clockTicks() int64 {
	const atClkTck = 17
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 100
	}
	for ; len(b) >= 16; b = b[16:] {
		if binary.NativeEndian.Uint64(b) == atClkTck {
			if v := int64(binary.NativeEndian.Uint64(b[8:])); v > 0 {
				return v
			}
		}
	}
	return 100
}
