package sim

import (
	"testing"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// TestDiskLossReason checks what a restart finds after each storage
// fault: every loss of durable state is detected, and a corrupt snapshot
// with an older one and the log since to fall back to is not a loss.
func TestDiskLossReason(t *testing.T) {
	z := func(c uint32) gpaxos.Zxid { return gpaxos.MakeZxid(1, c) }
	ents := func(from, to uint32) []gpaxos.Entry {
		var out []gpaxos.Entry
		for c := from; c <= to; c++ {
			out = append(out, gpaxos.Entry{Zxid: z(c)})
		}
		return out
	}
	// taken has snapshots the server took at 10, 20, 30, 40 (three kept)
	// and the log after the oldest kept.
	taken := disk{formatted: true, ents: ents(1, 45)}
	for c := uint32(10); c <= 40; c += 10 {
		taken.saveSnapshot(gpaxos.Snapshot{Index: z(c)}, false)
	}
	if len(taken.snaps) != keepSnaps || taken.base != z(20) || taken.ents[0].Zxid != z(21) {
		t.Fatalf("retention: %d snapshots, base %v, log from %v", len(taken.snaps), taken.base, taken.ents[0].Zxid)
	}
	// installed has one snapshot taken at 10, then one installed at 30.
	installed := disk{formatted: true, ents: ents(1, 12)}
	installed.saveSnapshot(gpaxos.Snapshot{Index: z(10)}, false)
	installed.saveSnapshot(gpaxos.Snapshot{Index: z(30)}, true)
	installed.ents = ents(31, 35)

	tests := []struct {
		name   string
		d      disk
		fault  func(d *disk)
		lost   bool
		newest gpaxos.Zxid // the snapshot the restart uses
	}{
		{"none", taken, func(d *disk) {}, false, z(40)},
		{"wipe", taken, func(d *disk) { *d = disk{} }, true, 0},
		{"hard state", taken, func(d *disk) { d.hs, d.noHS = gpaxos.HardState{}, true }, true, z(40)},
		{"tail", taken, func(d *disk) { d.ents, d.damaged = d.ents[:len(d.ents)-2], true }, true, z(40)},
		{"snapshot taken", taken, func(d *disk) { d.corrupt = 1 }, false, z(30)},
		{"snapshot installed", installed, func(d *disk) { d.corrupt = 1 }, true, z(10)},
	}
	for _, tt := range tests {
		d := tt.d
		d.snaps = append([]gpaxos.Snapshot(nil), d.snaps...)
		tt.fault(&d)
		if got := d.lossReason() != ""; got != tt.lost {
			t.Errorf("%s: lost = %v (%q), want %v", tt.name, got, d.lossReason(), tt.lost)
		}
		d.repair()
		var newest gpaxos.Zxid
		if sn := d.snap(); sn != nil {
			newest = sn.Index
		}
		if newest != tt.newest {
			t.Errorf("%s: restarts from snapshot %v, want %v", tt.name, newest, tt.newest)
		}
	}
}

func TestSmallestQuorum(t *testing.T) {
	group := func(n int) []quorum.ID { return make([]quorum.ID, n) }
	tests := []struct {
		groups [][]quorum.ID
		want   int
	}{
		{[][]quorum.ID{group(3)}, 2},
		{[][]quorum.ID{group(3), group(3), group(3)}, 4},
		{[][]quorum.ID{group(9), group(9), group(9)}, 10},
		{[][]quorum.ID{group(10), group(10), group(10), group(10), group(10)}, 18},
		{[][]quorum.ID{group(1), group(5)}, 3},
	}
	for _, tt := range tests {
		if got := smallestQuorum(quorum.Config{Groups: tt.groups}); got != tt.want {
			t.Errorf("%d groups: %d, want %d", len(tt.groups), got, tt.want)
		}
	}
}

// TestSurvivesLoss checks the bound on servers recovering from lost
// state: removing a server can make a loss the configuration before
// survived one that leaves no quorum.
func TestSurvivesLoss(t *testing.T) {
	ids := func(s ...quorum.ID) []quorum.ID { return s }
	lost := func(s ...gpaxos.ID) map[gpaxos.ID]bool {
		m := map[gpaxos.ID]bool{}
		for _, id := range s {
			m[id] = true
		}
		return m
	}
	tests := []struct {
		groups [][]quorum.ID
		lost   map[gpaxos.ID]bool
		want   bool
	}{
		{[][]quorum.ID{ids(1, 2, 3)}, lost(), true},
		{[][]quorum.ID{ids(1, 2, 3)}, lost(1), true},
		{[][]quorum.ID{ids(1, 2, 3)}, lost(1, 2), false},
		// 3's group of two is needed by every quorum once 8 is removed.
		{[][]quorum.ID{ids(7), ids(8, 10), ids(3, 9)}, lost(3), true},
		{[][]quorum.ID{ids(7), ids(10), ids(3, 9)}, lost(3), false},
		{[][]quorum.ID{ids(1, 2, 3), ids(4, 5, 6), ids(7, 8, 9)}, lost(1, 4), true},
		{[][]quorum.ID{ids(1, 2, 3), ids(4, 5, 6), ids(7, 8, 9)}, lost(1, 4, 7), false},
	}
	for _, tt := range tests {
		if got := survivesLoss(quorum.Config{Groups: tt.groups}, tt.lost); got != tt.want {
			t.Errorf("%v losing %v: %v, want %v", tt.groups, tt.lost, got, tt.want)
		}
	}
}
