package client

import "errors"

// Errors of the client itself. Errors the server reports are zkproto.Code
// values (zkproto.ErrNoNode, zkproto.ErrConnectionLoss, ...), never these.
var (
	// ErrClosed is returned by every call made after, or cut short by,
	// Close.
	ErrClosed = errors.New("client: connection closed")

	// ErrRequestTooLarge is returned for a request whose encoding exceeds
	// the maximum packet size (WithMaxPacketSize). It is refused before it
	// is sent because a server closes the connection on such a frame, which
	// would fail every other request in flight.
	ErrRequestTooLarge = errors.New("client: request exceeds the maximum packet size")

	// ErrNoServers is returned by Connect when the server list is empty.
	ErrNoServers = errors.New("client: no servers given")
)

// errProtocol marks a reply that breaks the protocol (an xid out of order,
// an undecodable header); the connection is dropped, as ClientCnxn does.
type errProtocol string

func (e errProtocol) Error() string { return "client: protocol error: " + string(e) }
