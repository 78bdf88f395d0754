package watch

import (
	"strings"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// WatcherID identifies a watcher: the server gives each client connection
// one, as ZooKeeper keys watches by ServerCnxn.
type WatcherID uint64

// Mode is a kind of watch. Each constant is one bit so that a Mode value can
// also hold the set of kinds one watcher has on one path, as Dump reports it.
type Mode uint8

// Watch kinds.
const (
	// Data is a one-shot watch set by getData, or by exists on a node that
	// exists.
	Data Mode = 1 << iota
	// Exist is a one-shot watch set by exists on a node that does not exist.
	// It behaves exactly as Data.
	Exist
	// Child is a one-shot watch set by getChildren.
	Child
	// Persistent is set by addWatch in mode PERSISTENT.
	Persistent
	// PersistentRecursive is set by addWatch in mode PERSISTENT_RECURSIVE.
	PersistentRecursive
)

// Groups of kinds as ZooKeeper's two managers hold them: dataSide is what
// DataTree.dataWatches holds (STANDARD data/exist, PERSISTENT and
// PERSISTENT_RECURSIVE), childSide what childWatches holds (STANDARD child
// and PERSISTENT, which is registered in both).
const (
	oneShotData = Data | Exist
	allModes    = Data | Exist | Child | Persistent | PersistentRecursive
	dataSide    = Data | Exist | Persistent | PersistentRecursive
	childSide   = Child | Persistent
)

var modeNames = [...]string{"data", "exist", "child", "persistent", "persistentRecursive"}

// String names the kinds in m, joined by '|'.
func (m Mode) String() string {
	if m == 0 {
		return "none"
	}
	var parts []string
	for i, name := range modeNames {
		if m&(1<<i) != 0 {
			parts = append(parts, name)
		}
	}
	if m&^allModes != 0 {
		parts = append(parts, "unknown")
	}
	return strings.Join(parts, "|")
}

// single reports whether m is exactly one known kind.
func (m Mode) single() bool {
	return m != 0 && m&(m-1) == 0 && m&^allModes == 0
}

// ModeFromAddWatch maps the mode of an addWatch request
// (zkproto.AddWatchPersistent, zkproto.AddWatchPersistentRecursive) to a
// Mode. ok is false for any other value; ZooKeeper fails such a request
// (WatcherMode.fromZooDef throws), which reaches the client as
// MARSHALLINGERROR.
func ModeFromAddWatch(mode int32) (m Mode, ok bool) {
	switch mode {
	case zkproto.AddWatchPersistent:
		return Persistent, true
	case zkproto.AddWatchPersistentRecursive:
		return PersistentRecursive, true
	}
	return 0, false
}

// selectorMask is the set of kinds a checkWatches/removeWatches request of
// type typ refers to, as DataTree.containsWatcher and removeWatch map
// WatcherType onto the two managers. ok is false for a type ZooKeeper does
// not know (WatcherType.fromInt throws: MARSHALLINGERROR).
func selectorMask(typ zkproto.WatcherType) (m Mode, ok bool) {
	switch typ {
	case zkproto.WatcherChildren:
		return Child, true
	case zkproto.WatcherData:
		return oneShotData, true
	case zkproto.WatcherPersistent:
		return Persistent, true
	case zkproto.WatcherPersistentRecursive:
		return PersistentRecursive, true
	case zkproto.WatcherAny:
		return allModes, true
	}
	return 0, false
}
