// Package client is a ZooKeeper client: it speaks the ZooKeeper 3.9 wire
// protocol (through package zkproto) to Giraffe or to Apache ZooKeeper.
//
// A Conn is one session. Connect opens it on one of the given servers; if
// the TCP connection breaks, the Conn reconnects to the next server of the
// list with the session id, password and the last zxid it has seen, so the
// session, its ephemeral nodes and its watches survive. Requests that were
// in flight (or queued) on the broken connection fail with
// zkproto.ErrConnectionLoss and are never retried silently, because their
// outcome is unknown: a create that failed with connection loss may or may
// not have happened. Requests submitted while the Conn is reconnecting wait
// for the next connection. Session expiry is final: the Conn reports
// StateExpired and every call fails with zkproto.ErrSessionExpired.
//
// Every operation comes in two forms. The asynchronous form (CreateAsync,
// GetAsync, ...) queues the request and returns a *Call at once; requests
// are pipelined on the one connection, and calls complete in the order they
// were submitted (their Done channels are closed in that order), which is
// ZooKeeper's FIFO client order. The synchronous form (Create, Get, ...) is
// the asynchronous one followed by Call.Wait with the caller's context: a
// cancelled context abandons the wait, not the request, so the order of
// requests on the wire and of their replies stays consistent.
//
// Errors from the server are zkproto.Code values, so callers test them with
// errors.Is(err, zkproto.ErrNodeExists) or ==. Errors of the client itself
// are ErrClosed, ErrRequestTooLarge and context errors.
//
// Watches: GetW, ExistsW and ChildrenW return a channel that receives
// exactly one Event and is then closed; AddWatch returns a PersistentWatch
// whose channel receives every event until the watch is removed or the
// session ends. Session state changes are reported on SessionEvents.
package client
