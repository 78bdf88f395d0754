package txn

import "strconv"

// Kind is what an entry does to the replicated state. The values are part of
// the log format and must never be renumbered.
type Kind uint8

// Entry kinds. The zero Kind is invalid, so that a zero Op is never mistaken
// for a real request.
const (
	// KindCreate creates a znode (create, create2, createContainer,
	// createTTL; Op.OpCode tells which).
	KindCreate Kind = 1
	// KindDelete deletes a znode.
	KindDelete Kind = 2
	// KindSetData replaces a znode's data.
	KindSetData Kind = 3
	// KindSetACL replaces a znode's ACL.
	KindSetACL Kind = 4
	// KindCheck checks a znode's version (inside a multi).
	KindCheck Kind = 5
	// KindMulti applies Op.Ops atomically.
	KindMulti Kind = 6
	// KindCreateSession adds Entry.Session to the session table.
	KindCreateSession Kind = 7
	// KindCloseSession removes a session (closed or expired) and its
	// ephemeral nodes.
	KindCloseSession Kind = 8
	// KindDeleteContainer is the reaper's delete of an empty container or an
	// expired TTL node.
	KindDeleteContainer Kind = 9
	// KindNoop changes nothing; sync uses it, and a new leader's first entry.
	KindNoop Kind = 10
	// KindNamespaces declares the namespace table in Op.Data (package
	// nsmap's encoding): every declared root becomes a persistent znode and
	// /zookeeper/namespaces publishes the table. The server that decides
	// for the ensemble proposes it when the tree's table differs from the
	// configured one.
	KindNamespaces Kind = 11
)

var kindNames = [...]string{
	KindCreate: "create", KindDelete: "delete", KindSetData: "setData",
	KindSetACL: "setACL", KindCheck: "check", KindMulti: "multi",
	KindCreateSession: "createSession", KindCloseSession: "closeSession",
	KindDeleteContainer: "deleteContainer", KindNoop: "noop", KindNamespaces: "namespaces",
}

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool { return k >= KindCreate && k <= KindNamespaces }

// String returns the kind's name.
func (k Kind) String() string {
	if k.Valid() {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}
