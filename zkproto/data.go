package zkproto

import "fmt"

// Xid is a client-chosen request id echoed in the reply header.
type Xid int32

// Special xids (ClientCnxn.java).
const (
	XidNotification Xid = -1
	XidPing         Xid = -2
	XidAuth         Xid = -4
	XidSetWatches   Xid = -8
)

// Perms are the permission bits of an ACL entry (ZooDefs.Perms).
const (
	PermRead   int32 = 1
	PermWrite  int32 = 2
	PermCreate int32 = 4
	PermDelete int32 = 8
	PermAdmin  int32 = 16
	PermAll    int32 = 31
)

// CreateMode flags as sent in CreateRequest.Flags (CreateMode.java).
const (
	ModePersistent                  int32 = 0
	ModeEphemeral                   int32 = 1
	ModePersistentSequential        int32 = 2
	ModeEphemeralSequential         int32 = 3
	ModeContainer                   int32 = 4
	ModePersistentWithTTL           int32 = 5
	ModePersistentSequentialWithTTL int32 = 6
)

// EventType is the type of a watch notification (Watcher.Event.EventType).
type EventType int32

// Watch event types.
const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

// KeeperState is the connection state carried in a watch notification.
type KeeperState int32

// Keeper states (Watcher.Event.KeeperState).
const (
	StateDisconnected      KeeperState = 0
	StateSyncConnected     KeeperState = 3
	StateAuthFailed        KeeperState = 4
	StateConnectedReadOnly KeeperState = 5
	StateExpired           KeeperState = -112
	StateClosed            KeeperState = 7
)

// WatcherType selects watches in checkWatches and removeWatches.
type WatcherType int32

// Watcher types (Watcher.WatcherType).
const (
	WatcherChildren            WatcherType = 1
	WatcherData                WatcherType = 2
	WatcherAny                 WatcherType = 3
	WatcherPersistent          WatcherType = 4
	WatcherPersistentRecursive WatcherType = 5
)

// AddWatch modes (ZooDefs.AddWatchModes).
const (
	AddWatchPersistent          int32 = 0
	AddWatchPersistentRecursive int32 = 1
)

// ContainerOwner is the ephemeralOwner value that marks a container node;
// TTL nodes carry ExtendedOwnerMask plus the TTL in the low bits
// (EphemeralType.java).
const (
	ContainerOwner    int64 = -1 << 63
	ExtendedOwnerMask int64 = -0x0100000000000000 // 0xff00000000000000
	MaxTTLMillis      int64 = 0x000000ffffffffff
)

// Id is an authentication identity: a scheme and an id within it.
type Id struct {
	Scheme string // "world", "auth", "digest", "ip", ...
	ID     string // the identity within the scheme, e.g. "anyone" for world
}

// ACL is one access-control entry.
type ACL struct {
	Perms int32 // a mask of PermRead, PermWrite, PermCreate, PermDelete, PermAdmin
	ID    Id    // whom the entry grants them to
}

// Common ids and ACLs (ZooDefs.Ids).
var (
	AnyoneID      = Id{Scheme: "world", ID: "anyone"}
	AuthIDs       = Id{Scheme: "auth", ID: ""}
	OpenACLUnsafe = []ACL{{Perms: PermAll, ID: AnyoneID}}
	CreatorAllACL = []ACL{{Perms: PermAll, ID: AuthIDs}}
	ReadACLUnsafe = []ACL{{Perms: PermRead, ID: AnyoneID}}
)

// Stat is the metadata of a znode, 68 bytes on the wire.
type Stat struct {
	Czxid          int64 // zxid of the create
	Mzxid          int64 // zxid of the last setData (the create's at first)
	Ctime          int64 // time of the create, ms since the epoch
	Mtime          int64 // time of the last setData, ms since the epoch
	Version        int32 // number of changes to the data
	Cversion       int32 // number of changes to the children
	Aversion       int32 // number of changes to the ACL
	EphemeralOwner int64 // owning session of an ephemeral, 0 otherwise (TTL and container nodes: see EphemeralType)
	DataLength     int32 // length of the data
	NumChildren    int32 // number of children
	Pzxid          int64 // zxid of the last change to the children
}

// Encode writes s in jute order.
func (s *Stat) Encode(e *Encoder) {
	e.Long(s.Czxid)
	e.Long(s.Mzxid)
	e.Long(s.Ctime)
	e.Long(s.Mtime)
	e.Int(s.Version)
	e.Int(s.Cversion)
	e.Int(s.Aversion)
	e.Long(s.EphemeralOwner)
	e.Int(s.DataLength)
	e.Int(s.NumChildren)
	e.Long(s.Pzxid)
}

// Decode reads s in jute order.
func (s *Stat) Decode(d *Decoder) error {
	s.Czxid = d.Long()
	s.Mzxid = d.Long()
	s.Ctime = d.Long()
	s.Mtime = d.Long()
	s.Version = d.Int()
	s.Cversion = d.Int()
	s.Aversion = d.Int()
	s.EphemeralOwner = d.Long()
	s.DataLength = d.Int()
	s.NumChildren = d.Int()
	s.Pzxid = d.Long()
	return d.Err()
}

// Encode writes id in jute order.
func (id *Id) Encode(e *Encoder) { e.String(id.Scheme); e.String(id.ID) }

// Decode reads id in jute order.
func (id *Id) Decode(d *Decoder) error {
	id.Scheme = d.String()
	id.ID = d.String()
	return d.Err()
}

// Encode writes a in jute order.
func (a *ACL) Encode(e *Encoder) { e.Int(a.Perms); a.ID.Encode(e) }

// Decode reads a in jute order.
func (a *ACL) Decode(d *Decoder) error {
	a.Perms = d.Int()
	return a.ID.Decode(d)
}

// EncodeACLs writes a vector of ACLs; a nil slice is written as jute's null
// vector (-1), as the Java client does for a missing list.
func EncodeACLs(e *Encoder, acls []ACL) {
	if acls == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(acls)))
	for i := range acls {
		acls[i].Encode(e)
	}
}

// DecodeACLs reads a vector of ACLs. A null vector decodes as nil.
func DecodeACLs(d *Decoder) []ACL {
	n, ok := d.VectorLen(12) // an ACL is at least 4+4+4 bytes
	if !ok {
		return nil
	}
	acls := make([]ACL, n)
	for i := range acls {
		if acls[i].Decode(d) != nil {
			return nil
		}
	}
	return acls
}

var eventNames = map[EventType]string{
	EventNone: "None", EventNodeCreated: "NodeCreated", EventNodeDeleted: "NodeDeleted",
	EventNodeDataChanged: "NodeDataChanged", EventNodeChildrenChanged: "NodeChildrenChanged",
	EventDataWatchRemoved: "DataWatchRemoved", EventChildWatchRemoved: "ChildWatchRemoved",
	EventPersistentWatchRemoved: "PersistentWatchRemoved",
}

// String returns ZooKeeper's name for the event type.
func (t EventType) String() string {
	if n, ok := eventNames[t]; ok {
		return n
	}
	return fmt.Sprintf("event(%d)", int32(t))
}
