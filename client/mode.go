package client

import "github.com/giraffe-coord/giraffe/zkproto"

// CreateMode is the kind of node Create makes (ZooKeeper's CreateMode; the
// values are the flags sent on the wire).
type CreateMode int32

// Create modes.
const (
	Persistent              = CreateMode(zkproto.ModePersistent)
	Ephemeral               = CreateMode(zkproto.ModeEphemeral)
	PersistentSequential    = CreateMode(zkproto.ModePersistentSequential)
	EphemeralSequential     = CreateMode(zkproto.ModeEphemeralSequential)
	Container               = CreateMode(zkproto.ModeContainer)
	PersistentTTL           = CreateMode(zkproto.ModePersistentWithTTL)
	PersistentSequentialTTL = CreateMode(zkproto.ModePersistentSequentialWithTTL)
)

// AnyVersion matches every version in Delete, Set, SetACL and CheckOp.
const AnyVersion int32 = -1

// IsEphemeral reports whether the node ends with the session.
func (m CreateMode) IsEphemeral() bool { return m == Ephemeral || m == EphemeralSequential }

// IsSequential reports whether the server appends a sequence number.
func (m CreateMode) IsSequential() bool {
	return m == PersistentSequential || m == EphemeralSequential || m == PersistentSequentialTTL
}

// IsContainer reports whether the node is a container.
func (m CreateMode) IsContainer() bool { return m == Container }

// IsTTL reports whether the node has a time to live.
func (m CreateMode) IsTTL() bool { return m == PersistentTTL || m == PersistentSequentialTTL }

// createRequest picks the opcode for a create, as ZooKeeper's client does:
// createTTL for TTL modes (or any TTL given: the server then decides
// whether the pair is valid), createContainer for containers, create2
// otherwise, so that every create returns the new node's Stat.
func createRequest(path string, data []byte, mode CreateMode, acl []zkproto.ACL, ttlMs int64) (zkproto.OpCode, zkproto.Record) {
	switch {
	case mode.IsTTL() || ttlMs != 0:
		return zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{Path: path, Data: data, ACL: acl, Flags: int32(mode), TTL: ttlMs}
	case mode.IsContainer():
		return zkproto.OpCreateContainer, &zkproto.CreateRequest{Path: path, Data: data, ACL: acl, Flags: int32(mode)}
	default:
		return zkproto.OpCreate2, &zkproto.CreateRequest{Path: path, Data: data, ACL: acl, Flags: int32(mode)}
	}
}
