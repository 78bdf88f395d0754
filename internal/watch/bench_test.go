package watch

import (
	"fmt"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// BenchmarkTriggerNoWatches is the cost every write pays when nobody watches
// the path (other paths are watched, none recursively).
func BenchmarkTriggerNoWatches(b *testing.B) {
	r := New()
	for i := 0; i < 1000; i++ {
		r.Add(fmt.Sprintf("/other/n%d", i), Data, WatcherID(i))
	}
	ev := Event{Type: zkproto.EventNodeDataChanged, Path: "/app/queue/item-0000000042", Zxid: 1}
	var out []Delivery
	b.ReportAllocs()
	for b.Loop() {
		out = r.Trigger(ev, out[:0])
	}
	if len(out) != 0 {
		b.Fatal("unexpected delivery")
	}
}

// BenchmarkTriggerNoWatchesWithRecursive is the same with one recursive watch
// elsewhere, which makes every write walk its ancestors.
func BenchmarkTriggerNoWatchesWithRecursive(b *testing.B) {
	r := New()
	r.Add("/elsewhere", PersistentRecursive, 1)
	ev := Event{Type: zkproto.EventNodeDataChanged, Path: "/app/queue/item-0000000042", Zxid: 1}
	var out []Delivery
	b.ReportAllocs()
	for b.Loop() {
		out = r.Trigger(ev, out[:0])
	}
}

// BenchmarkTrigger1000Watchers fires a path watched persistently by 1000
// connections (the watches stay, so every iteration does the same work).
func BenchmarkTrigger1000Watchers(b *testing.B) {
	r := New()
	for i := 0; i < 1000; i++ {
		r.Add("/config", Persistent, WatcherID(i))
	}
	ev := Event{Type: zkproto.EventNodeDataChanged, Path: "/config", Zxid: 1}
	var out []Delivery
	b.ReportAllocs()
	for b.Loop() {
		out = r.Trigger(ev, out[:0])
	}
	if len(out) != 1000 {
		b.Fatalf("%d deliveries", len(out))
	}
}

// BenchmarkTrigger1000OneShot re-arms 1000 one-shot data watches and fires
// them: the getData-watch-fire cycle of many clients on one node.
func BenchmarkTrigger1000OneShot(b *testing.B) {
	r := New()
	ev := Event{Type: zkproto.EventNodeDataChanged, Path: "/config", Zxid: 1}
	var out []Delivery
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < 1000; i++ {
			r.Add("/config", Data, WatcherID(i))
		}
		out = r.Trigger(ev, out[:0])
	}
	if len(out) != 1000 || r.Count() != 0 {
		b.Fatalf("%d deliveries, %d left", len(out), r.Count())
	}
}
