package itest

import (
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestLockCommand runs `giraffe lock` processes of every kind against one
// server: the commands they run never overlap, and lock exits with the
// command's status.
func TestLockCommand(t *testing.T) {
	p := StartStandalone(t)
	bin, _ := Binary()
	for _, kind := range []string{"tas-sync", "tas-async", "queue-sync", "queue-async", "reactive"} {
		t.Run(kind, func(t *testing.T) {
			type span struct{ start, end float64 }
			var mu sync.Mutex
			var spans []span
			var wg sync.WaitGroup
			for i := 0; i < 4; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out, err := exec.Command(bin, "lock", "--servers", p.Addr, "--kind", kind, "/locks/"+kind, "--",
						"sh", "-c", "date +%s.%N; sleep 0.15; date +%s.%N").Output()
					if err != nil {
						t.Errorf("lock: %v", err)
						return
					}
					f := strings.Fields(string(out))
					if len(f) != 2 {
						t.Errorf("output %q", out)
						return
					}
					a, _ := strconv.ParseFloat(f[0], 64)
					b, _ := strconv.ParseFloat(f[1], 64)
					mu.Lock()
					spans = append(spans, span{a, b})
					mu.Unlock()
				}()
			}
			wg.Wait()
			sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
			for i := 1; i < len(spans); i++ {
				if spans[i].start < spans[i-1].end {
					t.Fatalf("commands overlapped: %v", spans)
				}
			}
		})
	}
	err := exec.Command(bin, "lock", "--servers", p.Addr, "/locks/status", "--", "sh", "-c", "exit 7").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("lock did not exit with the command's status: %v", fmt.Sprint(err))
	}
}
