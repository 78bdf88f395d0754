package recipes

import "strings"

// Node names of the queue locks, kazoo's (kazoo/recipe/lock.py): a
// contender's node is <dir>/<uuid><name><seq>, with seq the server's
// ten-digit sequential suffix. kazoo's Lock and WriteLock use "__lock__",
// its ReadLock "__rlock__"; Curator's InterProcessMutex would be
// "_c_<uuid>-lock-<seq>" and is not recognized (kazoo needs
// extra_lock_patterns for it too).
const (
	lockNodeName  = "__lock__"
	rlockNodeName = "__rlock__"
	// tasNodeName is the test-and-set node every test-and-set contender
	// tries to create. It has no sequence suffix,
	// so kazoo does not count it as a contender.
	tasNodeName = "__tas__"
)

// Names each kind of queue contender waits for: kazoo's _EXCLUDE_NAMES.
// The exclusive queue lock waits for readers too (as kazoo's WriteLock),
// so that it can share a path with read locks; with kazoo's Lock, which
// waits for "__lock__" nodes only, it still forms one queue.
var (
	exclusiveBlockers = []string{lockNodeName, rlockNodeName}
	sharedBlockers    = []string{lockNodeName}
)

// contenderSeq returns the sequence suffix of child if child is a contender
// named by one of names: kazoo's regexp (?:names)(-?\d{10})$ searched in the
// child's name. The suffix is returned as text because kazoo orders
// contenders by comparing these strings, and both sides must agree on the
// order (it differs from the numeric order only after the parent's
// sequence counter overflows to negative values).
func contenderSeq(child string, names []string) (string, bool) {
	for _, n := range names {
		if seq, ok := seqAfter(child, n); ok {
			return seq, true
		}
	}
	return "", false
}

// seqAfter matches name followed by -?\d{10} at the end of child.
func seqAfter(child, name string) (string, bool) {
	for _, width := range []int{10, 11} {
		if len(child) < width+len(name) {
			continue
		}
		seq := child[len(child)-width:]
		if width == 11 && seq[0] != '-' {
			continue
		}
		if !allDigits(seq[width-10:]) || !strings.HasSuffix(child[:len(child)-width], name) {
			continue
		}
		return seq, true
	}
	return "", false
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// predecessor finds the node a queue contender waits for, as kazoo's
// _get_predecessor does: among the children that are contenders of a kind
// in blockers and whose sequence is smaller (as a string) than mySeq, the
// one with the greatest sequence. pred is "" when nothing blocks me;
// found reports whether me is among the children at all.
func predecessor(children []string, me, mySeq string, blockers []string) (pred string, found bool) {
	best := ""
	for _, c := range children {
		if c == me {
			found = true
			continue
		}
		seq, ok := contenderSeq(c, blockers)
		if !ok || seq >= mySeq {
			continue
		}
		if pred == "" || seq > best {
			pred, best = c, seq
		}
	}
	return pred, found
}
