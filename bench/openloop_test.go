package bench

import (
	"math"
	"math/rand"
	"os"
	"testing"
	"time"
)

// TestArrivalsArePoisson: the open loop's intervals have the mean 1/rate
// and the standard deviation of an exponential distribution (equal to the
// mean), and never go back in time.
func TestArrivalsArePoisson(t *testing.T) {
	const rate, n = 5000.0, 50000
	a := newArrivals(rate, rand.New(rand.NewSource(7)))
	prev := a.at
	var sum, sumSq float64
	for i := 0; i < n; i++ {
		at := a.next()
		d := at.Sub(prev).Seconds()
		if d < 0 {
			t.Fatalf("arrival %d before the one before it", i)
		}
		sum += d
		sumSq += d * d
		prev = at
	}
	mean := sum / n
	sd := math.Sqrt(sumSq/n - mean*mean)
	if want := 1 / rate; math.Abs(mean-want) > 0.02*want || math.Abs(sd-want) > 0.03*want {
		t.Fatalf("intervals: mean %v s, sd %v s; want both %v s", mean, sd, want)
	}
}

// TestProcessCPU reads this process's CPU time before and after burning
// some: it grows by about what was burnt.
func TestProcessCPU(t *testing.T) {
	before, err := processCPU([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
		x++
	}
	after, err := processCPU([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	// At least part of 200 ms of wall time on the CPU, even on a busy
	// machine; /proc counts in clock ticks.
	if got := after - before; got < 20*time.Millisecond {
		t.Fatalf("burnt 200 ms (%d loops), CPU time grew by %v", x, got)
	}
	if _, err := processCPU([]int{1 << 30}); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
