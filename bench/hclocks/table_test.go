package hclocks

import (
	"strings"
	"testing"
)

func TestSummarizeAndGoals(t *testing.T) {
	res := func(test int, cpu, ops float64) Result {
		return Result{Test: test, Loops: 1, CPUPerEnsemble: cpu, OpsPerSec: ops, SessionsPerClient: 1, LoadAvg: ops / 100,
			Ops: int64(ops) * 10, Ensembles: []Ensemble{{ID: "master", Throttled: 1, CPUSeconds: 9}, {ID: "w1", Throttled: 0.5, CPUSeconds: ops / 100, Fsyncs: int64(ops), EntriesPerFsync: 2}}}
	}
	rs := []Result{res(4, 0, 500), res(1, 0.25, 300), res(1, 0.25, 260), res(2, 0.25, 150), res(3, 0.25, 230),
		res(4, 0.25, 140), res(4, 0.25, 160), res(1, 0, 400)}
	cells := Summarize(rs)
	var order []string
	for _, c := range cells {
		order = append(order, c.Condition()+"/"+string(rune('0'+c.Test.Number)))
	}
	want := "0.25 CPU per ensemble/1 0.25 CPU per ensemble/2 0.25 CPU per ensemble/3 0.25 CPU per ensemble/4 no CPU quotas/1 no CPU quotas/4"
	if got := strings.Join(order, " "); got != want {
		t.Fatalf("cells %q, want %q", got, want)
	}
	c1 := cells[0]
	if c1.Mean != 280 || c1.Min != 260 || c1.Max != 300 || c1.VsTest4 != 280.0/150 || c1.Throttled != 0.5 ||
		c1.LoadMin != 2.6 || c1.WorkerCPUPerOp != 1 || c1.WorkerEntriesPerFsync != 2 || c1.LoadMax != 3 || len(c1.OpsPerSec) != 2 {
		t.Errorf("test 1 with quotas: %+v", c1)
	}
	if cells[4].VsTest4 != 0.8 {
		t.Errorf("test 1 without quotas vs test 4: %v, want 0.8", cells[4].VsTest4)
	}
	byTest := map[int]Cell{}
	for _, c := range cells[:4] {
		byTest[c.Test.Number] = c
	}
	g := Goals(byTest)
	for _, s := range []string{"= 1.87 (≥ 1.5: met)", "= 1.00 (within 15%: met)", "280 > 230 > 150 (met)"} {
		if !strings.Contains(g, s) {
			t.Errorf("goals %q lack %q", g, s)
		}
	}
	if Goals(map[int]Cell{1: c1}) != "" {
		t.Error("goals judged without all four tests")
	}
	var b strings.Builder
	Markdown(&b, cells)
	if !strings.Contains(b.String(), "| 1 | Y | Y | 280 (260–300, 2) | 1.87 | 1.00 | 0 | 1.00 | 2.00 | 50% | 2.6–3.0 |") ||
		!strings.Contains(b.String(), "| 1 | Y | Y | 400 (400–400, 1) | 0.80 | 1.00 | 0 | 1.00 | 2.00 | – |") {
		t.Errorf("markdown:\n%s", b.String())
	}
}
