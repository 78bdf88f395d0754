package sim

import "testing"

// TestDeliveryInteriorCrash crashes one interior member of a group of 27
// servers (forest 3-3): its subtree in the group's tree stops applying new
// commits, the rest of the ensemble does not, and the coordinator routes
// around the crashed member within about one election timeout (its down
// list), after which the subtree catches up.
func TestDeliveryInteriorCrash(t *testing.T) {
	o := DeliveryOptions{Kill: "interior", Crash: 1, WindowUS: 400_000}
	o.Nodes, o.Trees, o.Children = 27, 3, 3
	r, err := RunDelivery(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	timeoutMS := 100.0 // ElectionTicks 10 of 10 ms
	switch {
	case r.Commits == 0 || r.CommitGapMS > r.StallMS:
		t.Fatalf("the ensemble stopped committing: %d commits, longest gap %.1f ms", r.Commits, r.CommitGapMS)
	case len(r.Stalled) == 0 || len(r.Stalled) > 8:
		t.Fatalf("stalled servers %v: want the crashed member's subtree, at most 8 of its group", r.Stalled)
	case r.StallMaxMS > 1.5*timeoutMS:
		t.Fatalf("longest stall %.1f ms: the coordinator did not route around the crashed member in time", r.StallMaxMS)
	}
}
