package client

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// State is the state of a session as the client sees it. The values are
// ZooKeeper's Watcher.Event.KeeperState numbers, so a State converts to a
// zkproto.KeeperState.
type State int32

// Session states. Expired, AuthFailed and Closed are final.
const (
	// StateDisconnected: no connection; the Conn is trying the servers.
	StateDisconnected = State(zkproto.StateDisconnected)
	// StateConnected: the session is open on a server (SyncConnected).
	StateConnected = State(zkproto.StateSyncConnected)
	// StateConnectedReadOnly: connected to a read-only server, which
	// answers writes with NOTREADONLY (only with WithCanBeReadOnly).
	StateConnectedReadOnly = State(zkproto.StateConnectedReadOnly)
	// StateAuthFailed: a server rejected an AddAuth; the Conn is dead, as
	// ZooKeeper's AUTH_FAILED state is.
	StateAuthFailed = State(zkproto.StateAuthFailed)
	// StateExpired: the server no longer knows the session.
	StateExpired = State(zkproto.StateExpired)
	// StateClosed: Close was called.
	StateClosed = State(zkproto.StateClosed)
)

// String returns ZooKeeper's name for the state.
func (s State) String() string {
	switch s {
	case StateDisconnected:
		return "Disconnected"
	case StateConnected:
		return "SyncConnected"
	case StateConnectedReadOnly:
		return "ConnectedReadOnly"
	case StateAuthFailed:
		return "AuthFailed"
	case StateExpired:
		return "Expired"
	case StateClosed:
		return "Closed"
	}
	return fmt.Sprintf("state(%d)", int32(s))
}

// Final reports whether no state can follow s.
func (s State) Final() bool {
	return s == StateExpired || s == StateAuthFailed || s == StateClosed
}

// SessionEvent reports a change of the session's state.
type SessionEvent struct {
	// State is the state the session entered.
	State State
	// Server is the address connected to, for the connected states.
	Server string
	// SessionID is the session's id (0 before the first connection).
	SessionID int64
}
