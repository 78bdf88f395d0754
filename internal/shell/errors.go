package shell

import (
	"errors"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// describe turns an error into the line zkCli prints for it: its own
// wording for the codes it names (CliWrapperException), otherwise the
// KeeperException message "KeeperErrorCode = <message> for <path>", the
// path left out when the request had none.
func describe(err error, path string) string {
	var code zkproto.Code
	if !errors.As(err, &code) {
		return err.Error()
	}
	switch code {
	case zkproto.ErrNoNode:
		return "Node does not exist: " + path
	case zkproto.ErrNoChildrenForEphemerals:
		return "Ephemerals cannot have children: " + path
	case zkproto.ErrNodeExists:
		return "Node already exists: " + path
	case zkproto.ErrNotEmpty:
		return "Node not empty: " + path
	case zkproto.ErrNotReadOnly:
		return "Not a read-only call: " + path
	case zkproto.ErrInvalidACL:
		return "Acl is not valid : " + path
	case zkproto.ErrNoAuth:
		return "Insufficient permission : " + path
	case zkproto.ErrBadArguments:
		return "Arguments are not valid : " + path
	case zkproto.ErrBadVersion:
		return "version No is not valid : " + path
	case zkproto.ErrReconfigInProgress:
		return "Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)"
	case zkproto.ErrNewConfigNoQuorum:
		return "No quorum of new config is connected and up-to-date with the leader of last committed config" +
			" - try invoking reconfiguration after new servers are connected and synced"
	case zkproto.ErrQuotaExceeded:
		return "Quota has exceeded : " + path
	}
	msg := "KeeperErrorCode = " + codeMessage(code)
	if path != "" {
		msg += " for " + path
	}
	return msg
}

// codeMessage is KeeperException's message for a code.
func codeMessage(c zkproto.Code) string {
	if m, ok := codeMessages[c]; ok {
		return m
	}
	return "Unknown error " + c.String()
}

var codeMessages = map[zkproto.Code]string{
	zkproto.OK:                           "ok",
	zkproto.ErrSystemError:               "SystemError",
	zkproto.ErrRuntimeInconsistency:      "RuntimeInconsistency",
	zkproto.ErrDataInconsistency:         "DataInconsistency",
	zkproto.ErrConnectionLoss:            "ConnectionLoss",
	zkproto.ErrMarshallingError:          "MarshallingError",
	zkproto.ErrNewConfigNoQuorum:         "NewConfigNoQuorum",
	zkproto.ErrReconfigInProgress:        "ReconfigInProgress",
	zkproto.ErrUnimplemented:             "Unimplemented",
	zkproto.ErrOperationTimeout:          "OperationTimeout",
	zkproto.ErrBadArguments:              "BadArguments",
	zkproto.ErrAPIError:                  "APIError",
	zkproto.ErrNoNode:                    "NoNode",
	zkproto.ErrNoAuth:                    "NoAuth",
	zkproto.ErrBadVersion:                "BadVersion",
	zkproto.ErrNoChildrenForEphemerals:   "NoChildrenForEphemerals",
	zkproto.ErrNodeExists:                "NodeExists",
	zkproto.ErrInvalidACL:                "InvalidACL",
	zkproto.ErrAuthFailed:                "AuthFailed",
	zkproto.ErrNotEmpty:                  "Directory not empty",
	zkproto.ErrSessionExpired:            "Session expired",
	zkproto.ErrInvalidCallback:           "Invalid callback",
	zkproto.ErrSessionMoved:              "Session moved",
	zkproto.ErrNotReadOnly:               "Not a read-only call",
	zkproto.ErrEphemeralOnLocalSession:   "Ephemeral node on local session",
	zkproto.ErrNoWatcher:                 "No such watcher",
	zkproto.ErrReconfigDisabled:          "Reconfig is disabled",
	zkproto.ErrSessionClosedRequiresSASL: "Session closed because client failed to authenticate",
	zkproto.ErrQuotaExceeded:             "Quota has exceeded",
	zkproto.ErrThrottledOp:               "Op throttled due to high load",
}
