package datatree

import (
	"github.com/giraffe-coord/giraffe/zkproto"
)

// node is one znode. Its path is the key it is stored under in Tree.nodes;
// children maps each child's name to the child, so subtree walks need no
// path lookups.
type node struct {
	nodeState
	children map[string]*node
	// top is the account of the top-level subtree the node is in
	// (subtree.go).
	top *subtree
	// snapGen is the generation of the snapshot in progress that needs no
	// image of the node (snapshot_view.go).
	snapGen uint32
}

// nodeState is everything about a node that an op may change, apart from its
// children: the unit that a multi saves and restores on rollback.
type nodeState struct {
	data                []byte
	acl                 *aclSet
	czxid, mzxid, pzxid int64
	ctime, mtime        int64
	// owner is ZooKeeper's stored ephemeralOwner: 0, a session id, the
	// container marker or the TTL encoding (see ownerKind).
	owner             int64
	version, aversion int32
	// cversion counts the children ever created under the node (ZooKeeper's
	// persisted cversion); it names sequential children.
	cversion int32
	// pathHash and dataHash are cached inputs of digest, so that changing a
	// node's stat does not rehash its path and data.
	pathHash, dataHash uint64
	// digest is this node's contribution to the tree digest.
	digest uint64
}

// stat reports the node's Stat as ZooKeeper's DataNode.copyStat does.
func (n *node) stat() zkproto.Stat {
	nc := int32(len(n.children))
	owner := n.owner
	if ownerKindOf(owner) != ownerSession {
		owner = 0
	}
	return zkproto.Stat{
		Czxid:          n.czxid,
		Mzxid:          n.mzxid,
		Ctime:          n.ctime,
		Mtime:          n.mtime,
		Version:        n.version,
		Cversion:       n.cversion*2 - nc,
		Aversion:       n.aversion,
		EphemeralOwner: owner,
		DataLength:     int32(len(n.data)),
		NumChildren:    nc,
		Pzxid:          n.pzxid,
	}
}

// ownerKind is ZooKeeper's EphemeralType, read from a stored ephemeralOwner.
type ownerKind uint8

const (
	ownerNone      ownerKind = iota // a persistent node (VOID)
	ownerSession                    // an ephemeral node (NORMAL)
	ownerContainer                  // a container node
	ownerTTL                        // a TTL node
)

// ownerKindOf classifies a stored ephemeralOwner. Every owner with the
// extended-type byte set is a TTL node, as in ZooKeeper with extended types
// enabled; the server can only create TTL nodes with them enabled, and
// session ids never have that byte (see validSessionID).
func ownerKindOf(owner int64) ownerKind {
	switch {
	case owner == 0:
		return ownerNone
	case owner == zkproto.ContainerOwner:
		return ownerContainer
	case owner&zkproto.ExtendedOwnerMask == zkproto.ExtendedOwnerMask:
		return ownerTTL
	}
	return ownerSession
}

// ttlOwner is EphemeralType.TTL.toEphemeralOwner; ttl must be valid.
func ttlOwner(ttl int64) int64 { return zkproto.ExtendedOwnerMask | ttl }

// ttlOf is EphemeralType.TTL.getValue.
func ttlOf(owner int64) int64 { return owner & zkproto.MaxTTLMillis }

// validSessionID reports whether id can own ephemeral nodes without being
// read back as another node type: not 0, not the container marker, and
// without the extended-type byte. ZooKeeper's session ids satisfy this by
// construction (the top byte is the server id, at most 254).
func validSessionID(id int64) bool {
	return ownerKindOf(id) == ownerSession
}
