package sim

import "testing"

// TestDeliveryInteriorCrash crashes one interior member of a group of 27
// servers (forest 3-3): with a per-group tree its subtree stops applying
// commits until the coordinator routes around it; with the forest's trees
// every live server keeps applying them through the other trees.
func TestDeliveryInteriorCrash(t *testing.T) {
	for _, d := range []string{DisseminateGroup, DisseminateForest} {
		o := DeliveryOptions{Kill: "interior", Crash: 1, WindowUS: 400_000}
		o.Nodes, o.Trees, o.Children, o.Dissemination = 27, 3, 3, d
		r, err := RunDelivery(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", r)
		if r.Commits == 0 {
			t.Fatalf("%s: nothing committed after the crash", d)
		}
		switch stalled := len(r.Stalled) > 0; {
		case d == DisseminateGroup && !stalled:
			t.Fatalf("group trees: no server stalled below the crashed interior member %v", r.Victims)
		case d == DisseminateForest && stalled:
			t.Fatalf("forest: servers %v stalled although every tree but one is whole", r.Stalled)
		}
	}
}
