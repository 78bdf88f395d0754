package datatree

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// The tree digest is the sum (mod 2^64) of one hash per node and one per
// session, so it does not depend on the order anything was added, and it is
// kept up to date by subtracting a node's old hash and adding its new one on
// every change: reading it is O(1), and every change costs one short hash.
// Each hash covers a domain tag, so that no node can hash like a session.
const (
	tagNode    byte = 'n'
	tagSession byte = 's'
)

// nodeDigest hashes everything replicas must agree on about a node: its path
// and data (through their cached hashes, plus whether the data is null), its
// ACL list (through the interned set's hash) and every stored stat field. The
// number of children is implied by the children's own hashes.
func nodeDigest(s *nodeState) uint64 {
	var b [1 + 8*9 + 4*3 + 1]byte
	b[0] = tagNode
	o := 1
	for _, v := range [...]uint64{s.pathHash, s.dataHash, s.acl.hash,
		uint64(s.czxid), uint64(s.mzxid), uint64(s.pzxid),
		uint64(s.ctime), uint64(s.mtime), uint64(s.owner)} {
		binary.LittleEndian.PutUint64(b[o:], v)
		o += 8
	}
	for _, v := range [...]int32{s.version, s.aversion, s.cversion} {
		binary.LittleEndian.PutUint32(b[o:], uint32(v))
		o += 4
	}
	if s.data == nil {
		b[o] = 1
	}
	return xxhash.Sum64(b[:])
}

// sessionDigest hashes a session table entry.
func sessionDigest(id int64, timeout int32, passwd []byte) uint64 {
	h := xxhash.New()
	var b [1 + 8 + 4]byte
	b[0] = tagSession
	binary.LittleEndian.PutUint64(b[1:], uint64(id))
	binary.LittleEndian.PutUint32(b[9:], uint32(timeout))
	_, _ = h.Write(b[:])
	_, _ = h.Write(passwd)
	return h.Sum64()
}

// hashPath and hashData compute the cached per-node inputs.
func hashPath(p string) uint64 { return xxhash.Sum64String(p) }
func hashData(d []byte) uint64 { return xxhash.Sum64(d) }
