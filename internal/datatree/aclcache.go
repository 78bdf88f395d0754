package datatree

import (
	"slices"

	"github.com/cespare/xxhash/v2"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// aclSet is one distinct ACL list, shared by every node that has it, as in
// ZooKeeper's ReferenceCountedACLCache: most trees use a handful of lists, so
// interning them saves a slice per node and lets the snapshot write each list
// once.
type aclSet struct {
	list []zkproto.ACL
	hash uint64 // hash of the list's encoding; a digest input
	refs int    // nodes using it
	next *aclSet
}

// aclTable interns ACL lists by hash, chaining the (rare) collisions.
type aclTable struct {
	sets    map[uint64]*aclSet
	scratch []byte // encoding buffer, reused to keep interning allocation-free
}

func newACLTable() aclTable { return aclTable{sets: make(map[uint64]*aclSet)} }

// hashACL hashes the jute encoding of list.
func (at *aclTable) hashACL(list []zkproto.ACL) uint64 {
	enc := zkproto.NewEncoder(at.scratch[:0])
	zkproto.EncodeACLs(enc, list)
	at.scratch = enc.Bytes()
	return xxhash.Sum64(at.scratch)
}

// acquire returns the shared set equal to list, creating it if needed, and
// counts one more user. The set may keep list itself, so the caller must not
// modify list afterwards.
func (at *aclTable) acquire(list []zkproto.ACL) *aclSet {
	h := at.hashACL(list)
	for s := at.sets[h]; s != nil; s = s.next {
		if slices.Equal(s.list, list) {
			s.refs++
			return s
		}
	}
	s := &aclSet{list: list, hash: h, refs: 1, next: at.sets[h]}
	at.sets[h] = s
	return s
}

// release drops one user of s and forgets s when none is left.
func (at *aclTable) release(s *aclSet) {
	s.refs--
	if s.refs > 0 {
		return
	}
	head := at.sets[s.hash]
	if head == s {
		if s.next == nil {
			delete(at.sets, s.hash)
		} else {
			at.sets[s.hash] = s.next
		}
		s.next = nil
		return
	}
	for p := head; p != nil; p = p.next {
		if p.next == s {
			p.next = s.next
			s.next = nil
			return
		}
	}
}

// all returns every interned set.
func (at *aclTable) all() []*aclSet {
	var out []*aclSet
	for _, s := range at.sets {
		for ; s != nil; s = s.next {
			out = append(out, s)
		}
	}
	return out
}
