package txn

import "github.com/giraffe-coord/giraffe/zkproto"

// Op is one request as it is ordered. Which fields matter depends on Kind:
//
//	KindCreate:    OpCode, Path, Data, ACL, Flags, TTL (createTTL only)
//	KindDelete:    Path, Version
//	KindSetData:   Path, Data, Version
//	KindSetACL:    Path, ACL, Version
//	KindCheck:     Path, Version
//	KindMulti:     Ops (each a create, delete, setData or check)
//	KindDeleteContainer: Path
//	KindNamespaces: Data (the table)
//
// A nil Data is kept distinct from an empty one, as ZooKeeper keeps a null
// buffer distinct from an empty one.
type Op struct {
	Kind Kind
	// OpCode is the client opcode. For a create it selects the node type
	// as ZooKeeper's transaction type does (createContainer: container,
	// createTTL: TTL node, otherwise Flags decide) and, for every op, the
	// shape of the reply.
	OpCode  zkproto.OpCode
	Path    string
	Data    []byte
	ACL     []zkproto.ACL
	Flags   int32 // create mode (zkproto.Mode*)
	TTL     int64 // createTTL: ms
	Version int32 // expected version; -1 matches any
	Ops     []Op  // multi
}

// Entry is an ordered write: the request plus everything decided once,
// before ordering, that every replica needs to apply it identically.
type Entry struct {
	Zxid    int64
	Time    int64        // ms since the Unix epoch, decided by the proposer
	Session int64        // the issuing session; 0 for internal entries
	Auth    []zkproto.Id // the connection's authenticated ids, for ACL checks
	Timeout int32        // KindCreateSession: negotiated timeout, ms
	Passwd  []byte       // KindCreateSession: the session password
	Op      Op
}

// Result is the outcome of applying an entry.
type Result struct {
	// Err is OK or the ZooKeeper error of the op. For a failed multi it is
	// the code of the op that failed.
	Err zkproto.Code
	// Path is the created path (with its sequential suffix) of a create.
	Path string
	// Stat is the node's Stat after a create, setData or setACL.
	Stat zkproto.Stat
	// Multi has one result per op of a multi. When an op fails, the ops
	// before it report OK (with no path or stat), the failing op its code,
	// and every later op RUNTIMEINCONSISTENCY, and nothing has changed.
	Multi []Result
}
