package hclocks

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Cell is the runs of one test under one condition (quota and loops): a
// cell of Table 1.
type Cell struct {
	Test           Test
	CPUPerEnsemble float64
	Loops          int
	// OpsPerSec are the runs' throughputs, in the order given.
	OpsPerSec []float64
	// Mean, Min and Max summarize OpsPerSec; VsTest4 is Mean over the
	// mean of test 4 under the same condition (0 if there is none).
	Mean, Min, Max, VsTest4 float64
	// SessionsPerClient is the mean over runs; SessionExpiries the sum.
	SessionsPerClient float64
	SessionExpiries   int
	// Throttled is the mean over runs and workers of the fraction of
	// quota periods a worker was held back in.
	Throttled float64
	// WorkerCPUPerOp is the CPU the worker ensembles used per operation,
	// in milliseconds, over all the runs.
	WorkerCPUPerOp float64
	// WorkerEntriesPerFsync is the log entries the worker ensembles'
	// servers made durable per fsync, over all the runs (0: not measured).
	WorkerEntriesPerFsync float64
	// LoadMin and LoadMax bound the machine's load average at the end of
	// the runs.
	LoadMin, LoadMax float64
}

// Condition names a cell's condition.
func (c Cell) Condition() string {
	q := "no CPU quotas"
	if c.CPUPerEnsemble > 0 {
		q = fmt.Sprintf("%.3g CPU per ensemble", c.CPUPerEnsemble)
	}
	if c.Loops > 1 {
		q += fmt.Sprintf(", %d loops per client", c.Loops)
	}
	return q
}

// Summarize groups results into cells, ordered by condition (quotas
// first) and test.
func Summarize(rs []Result) []Cell {
	type key struct {
		test, loops int
		cpu         float64
	}
	byKey := map[key]*Cell{}
	var keys []key
	throttledRuns := map[key]int{}
	workerCPU, ops := map[key]float64{}, map[key]float64{}
	fsyncs, fsynced := map[key]float64{}, map[key]float64{}
	for _, r := range rs {
		k := key{r.Test, r.Loops, r.CPUPerEnsemble}
		c := byKey[k]
		if c == nil {
			c = &Cell{Test: Tests[r.Test-1], CPUPerEnsemble: r.CPUPerEnsemble, Loops: r.Loops, Min: r.OpsPerSec, Max: r.OpsPerSec,
				LoadMin: r.LoadAvg, LoadMax: r.LoadAvg}
			byKey[k] = c
			keys = append(keys, k)
		}
		c.OpsPerSec = append(c.OpsPerSec, r.OpsPerSec)
		c.Min, c.Max = min(c.Min, r.OpsPerSec), max(c.Max, r.OpsPerSec)
		c.LoadMin, c.LoadMax = min(c.LoadMin, r.LoadAvg), max(c.LoadMax, r.LoadAvg)
		c.SessionsPerClient += r.SessionsPerClient
		c.SessionExpiries += r.SessionExpiries
		ops[k] += float64(r.Ops)
		for _, e := range r.Ensembles {
			if e.ID != "master" {
				c.Throttled += e.Throttled
				throttledRuns[k]++
				workerCPU[k] += e.CPUSeconds
				fsyncs[k] += float64(e.Fsyncs)
				fsynced[k] += float64(e.Fsyncs) * e.EntriesPerFsync
			}
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(-cmp.Compare(a.cpu, b.cpu), cmp.Compare(a.loops, b.loops), cmp.Compare(a.test, b.test))
	})
	var cells []Cell
	for _, k := range keys {
		c := byKey[k]
		n := float64(len(c.OpsPerSec))
		for _, v := range c.OpsPerSec {
			c.Mean += v
		}
		c.Mean /= n
		c.SessionsPerClient /= n
		if ops[k] > 0 {
			c.WorkerCPUPerOp = 1000 * workerCPU[k] / ops[k]
		}
		if fsyncs[k] > 0 {
			c.WorkerEntriesPerFsync = fsynced[k] / fsyncs[k]
		}
		if m := throttledRuns[k]; m > 0 {
			c.Throttled /= float64(m)
		}
		if t4 := byKey[key{4, k.loops, k.cpu}]; t4 != nil {
			var sum float64
			for _, v := range t4.OpsPerSec {
				sum += v
			}
			c.VsTest4 = c.Mean / (sum / float64(len(t4.OpsPerSec)))
		}
		cells = append(cells, *c)
	}
	return cells
}

// Markdown writes the cells as one table per condition, each followed by
// the paper's goals and whether this condition meets them.
func Markdown(w io.Writer, cells []Cell) {
	for i := 0; i < len(cells); {
		j := i
		for j < len(cells) && cells[j].Condition() == cells[i].Condition() {
			j++
		}
		group := cells[i:j]
		fmt.Fprintf(w, "%s:\n\n", group[0].Condition())
		fmt.Fprintln(w, "| test | recruitment | locality | ops/s, mean (min–max, runs) | vs test 4 | worker sessions per client | sessions ended | worker CPU per op (ms) | worker entries per fsync | workers throttled | load average |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
		byTest := map[int]Cell{}
		for _, c := range group {
			byTest[c.Test.Number] = c
			throttled, batch := "–", "–"
			if c.CPUPerEnsemble > 0 {
				throttled = fmt.Sprintf("%.0f%%", 100*c.Throttled)
			}
			if c.WorkerEntriesPerFsync > 0 {
				batch = fmt.Sprintf("%.2f", c.WorkerEntriesPerFsync)
			}
			fmt.Fprintf(w, "| %d | %s | %s | %.0f (%.0f–%.0f, %d) | %.2f | %.2f | %d | %.2f | %s | %s | %.1f–%.1f |\n",
				c.Test.Number, yn(c.Test.Recruitment), yn(c.Test.Locality), c.Mean, c.Min, c.Max, len(c.OpsPerSec),
				c.VsTest4, c.SessionsPerClient, c.SessionExpiries, c.WorkerCPUPerOp, batch, throttled, c.LoadMin, c.LoadMax)
		}
		fmt.Fprintln(w)
		if goals := Goals(byTest); goals != "" {
			fmt.Fprintf(w, "%s\n\n", goals)
		}
		i = j
	}
}

// Goals checks the shape of the paper's Table 1 on the cells of one
// condition, by test number: test 1 at least 1.5 times test 4, test 2
// within 15% of test 4, test 1 above test 3 above test 4.
func Goals(byTest map[int]Cell) string {
	t1, ok1 := byTest[1]
	t2, ok2 := byTest[2]
	t3, ok3 := byTest[3]
	t4, ok4 := byTest[4]
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return ""
	}
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "not met"
	}
	r1, r2 := t1.Mean/t4.Mean, t2.Mean/t4.Mean
	var b strings.Builder
	fmt.Fprintf(&b, "Goals: test 1 / test 4 = %.2f (≥ 1.5: %s); test 2 / test 4 = %.2f (within 15%%: %s); ",
		r1, met(r1 >= 1.5), r2, met(r2 >= 0.85 && r2 <= 1.15))
	fmt.Fprintf(&b, "test 1 > test 3 > test 4: %.0f > %.0f > %.0f (%s).",
		t1.Mean, t3.Mean, t4.Mean, met(t1.Mean > t3.Mean && t3.Mean > t4.Mean))
	return b.String()
}

func yn(b bool) string {
	if b {
		return "Y"
	}
	return "N"
}
