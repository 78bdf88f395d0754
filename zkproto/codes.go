// Package zkproto is the ZooKeeper 3.9 client wire protocol: opcodes, error
// codes, the jute binary encoding, the request and reply records, and framing.
//
// Every decoder here is bounds-checked and returns an error on malformed
// input; nothing in this package panics on bytes that come from a client.
// The numbering of opcodes and error codes follows ZooDefs.OpCode and
// KeeperException.Code exactly and must never be renumbered.
package zkproto

import "fmt"

// OpCode identifies a request type (ZooDefs.OpCode).
type OpCode int32

// The client opcodes of ZooKeeper 3.9.
const (
	OpNotification         OpCode = 0
	OpCreate               OpCode = 1
	OpDelete               OpCode = 2
	OpExists               OpCode = 3
	OpGetData              OpCode = 4
	OpSetData              OpCode = 5
	OpGetACL               OpCode = 6
	OpSetACL               OpCode = 7
	OpGetChildren          OpCode = 8
	OpSync                 OpCode = 9
	OpPing                 OpCode = 11
	OpGetChildren2         OpCode = 12
	OpCheck                OpCode = 13
	OpMulti                OpCode = 14
	OpCreate2              OpCode = 15
	OpReconfig             OpCode = 16
	OpCheckWatches         OpCode = 17
	OpRemoveWatches        OpCode = 18
	OpCreateContainer      OpCode = 19
	OpDeleteContainer      OpCode = 20
	OpCreateTTL            OpCode = 21
	OpMultiRead            OpCode = 22
	OpAuth                 OpCode = 100
	OpSetWatches           OpCode = 101
	OpSASL                 OpCode = 102
	OpGetEphemerals        OpCode = 103
	OpGetAllChildrenNumber OpCode = 104
	OpSetWatches2          OpCode = 105
	OpAddWatch             OpCode = 106
	OpWhoAmI               OpCode = 107
	OpCreateSession        OpCode = -10
	OpCloseSession         OpCode = -11
	OpError                OpCode = -1
)

var opNames = map[OpCode]string{
	OpNotification: "notification", OpCreate: "create", OpDelete: "delete",
	OpExists: "exists", OpGetData: "getData", OpSetData: "setData",
	OpGetACL: "getACL", OpSetACL: "setACL", OpGetChildren: "getChildren",
	OpSync: "sync", OpPing: "ping", OpGetChildren2: "getChildren2",
	OpCheck: "check", OpMulti: "multi", OpCreate2: "create2",
	OpReconfig: "reconfig", OpCheckWatches: "checkWatches",
	OpRemoveWatches: "removeWatches", OpCreateContainer: "createContainer",
	OpDeleteContainer: "deleteContainer", OpCreateTTL: "createTTL",
	OpMultiRead: "multiRead", OpAuth: "auth", OpSetWatches: "setWatches",
	OpSASL: "sasl", OpGetEphemerals: "getEphemerals",
	OpGetAllChildrenNumber: "getAllChildrenNumber", OpSetWatches2: "setWatches2",
	OpAddWatch: "addWatch", OpWhoAmI: "whoAmI", OpCreateSession: "createSession",
	OpCloseSession: "closeSession", OpError: "error",
}

// String returns ZooKeeper's name for the opcode.
func (o OpCode) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("op(%d)", int32(o))
}

// Known reports whether o is an opcode of ZooKeeper 3.9.
func (o OpCode) Known() bool { _, ok := opNames[o]; return ok }

// Code is a ZooKeeper error code (KeeperException.Code). Code implements
// error so that the data tree and the server can return codes directly; OK is
// never returned as an error.
type Code int32

// The error codes of ZooKeeper 3.9.
const (
	OK                           Code = 0
	ErrSystemError               Code = -1
	ErrRuntimeInconsistency      Code = -2
	ErrDataInconsistency         Code = -3
	ErrConnectionLoss            Code = -4
	ErrMarshallingError          Code = -5
	ErrUnimplemented             Code = -6
	ErrOperationTimeout          Code = -7
	ErrBadArguments              Code = -8
	ErrUnknownSession            Code = -12
	ErrNewConfigNoQuorum         Code = -13
	ErrReconfigInProgress        Code = -14
	ErrAPIError                  Code = -100
	ErrNoNode                    Code = -101
	ErrNoAuth                    Code = -102
	ErrBadVersion                Code = -103
	ErrNoChildrenForEphemerals   Code = -108
	ErrNodeExists                Code = -110
	ErrNotEmpty                  Code = -111
	ErrSessionExpired            Code = -112
	ErrInvalidCallback           Code = -113
	ErrInvalidACL                Code = -114
	ErrAuthFailed                Code = -115
	ErrSessionMoved              Code = -118
	ErrNotReadOnly               Code = -119
	ErrEphemeralOnLocalSession   Code = -120
	ErrNoWatcher                 Code = -121
	ErrRequestTimeout            Code = -122
	ErrReconfigDisabled          Code = -123
	ErrSessionClosedRequiresSASL Code = -124
	ErrQuotaExceeded             Code = -125
	ErrThrottledOp               Code = -127
)

var codeNames = map[Code]string{
	OK: "OK", ErrSystemError: "SYSTEMERROR", ErrRuntimeInconsistency: "RUNTIMEINCONSISTENCY",
	ErrDataInconsistency: "DATAINCONSISTENCY", ErrConnectionLoss: "CONNECTIONLOSS",
	ErrMarshallingError: "MARSHALLINGERROR", ErrUnimplemented: "UNIMPLEMENTED",
	ErrOperationTimeout: "OPERATIONTIMEOUT", ErrBadArguments: "BADARGUMENTS",
	ErrUnknownSession: "UNKNOWNSESSION", ErrNewConfigNoQuorum: "NEWCONFIGNOQUORUM",
	ErrReconfigInProgress: "RECONFIGINPROGRESS", ErrAPIError: "APIERROR",
	ErrNoNode: "NONODE", ErrNoAuth: "NOAUTH", ErrBadVersion: "BADVERSION",
	ErrNoChildrenForEphemerals: "NOCHILDRENFOREPHEMERALS", ErrNodeExists: "NODEEXISTS",
	ErrNotEmpty: "NOTEMPTY", ErrSessionExpired: "SESSIONEXPIRED",
	ErrInvalidCallback: "INVALIDCALLBACK", ErrInvalidACL: "INVALIDACL",
	ErrAuthFailed: "AUTHFAILED", ErrSessionMoved: "SESSIONMOVED",
	ErrNotReadOnly: "NOTREADONLY", ErrEphemeralOnLocalSession: "EPHEMERALONLOCALSESSION",
	ErrNoWatcher: "NOWATCHER", ErrRequestTimeout: "REQUESTTIMEOUT",
	ErrReconfigDisabled: "RECONFIGDISABLED", ErrSessionClosedRequiresSASL: "SESSIONCLOSEDREQUIRESASLAUTH",
	ErrQuotaExceeded: "QUOTAEXCEEDED", ErrThrottledOp: "THROTTLEDOP",
}

// String returns ZooKeeper's name for the code.
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("code(%d)", int32(c))
}

// Error makes Code usable as an error value.
func (c Code) Error() string { return "zookeeper: " + c.String() }

// CodeOf returns the ZooKeeper code carried by err: OK for nil, the code
// itself for a Code, and ErrSystemError for any other error.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	if c, ok := err.(Code); ok {
		return c
	}
	return ErrSystemError
}
