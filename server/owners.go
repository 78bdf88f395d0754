package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Session ownership (ZooKeeper's SESSIONMOVED).
//
// A client's requests reach the log through the server it is connected to.
// When the client loses that connection and reconnects to another server,
// requests it sent through the first one may still be on their way to the
// leader (queued behind a partition, say) and would be ordered after the
// ones it sends through the second: a delete retried after a lost answer
// could then land after another client took over the node, and the
// session's own requests would no longer be in the order it sent them.
//
// So every replica keeps, for each session, the server its requests may
// come from: the one that created it, then the one it last reconnected
// through. A reconnect through another server first orders a move entry
// and answers the handshake only once it is applied; a write of the
// session proposed by any other server and ordered after the move is
// refused with SESSIONMOVED, on every replica alike. The table is part of
// the replicated state and of its snapshots.

// bodyMove is a proposal body: the session (8 bytes) now sends its
// requests through the origin of the entry, provided its owner is still
// the one named next (8 bytes; 0: none recorded). The condition makes a
// move that arrives late (proposed by a server the client gave up on
// during the handshake, after a move to another server was ordered) fail
// instead of taking the session from the server the client is on.
const bodyMove byte = 4

// claimSession makes this server the owner of session id before a
// reconnecting client is answered: OK, or why not (ErrSessionExpired if
// the session ended meanwhile; ErrSessionMoved if another move was
// ordered first, and the client should try again; ErrConnectionLoss if the
// connection closed or the server is stopping first). Standalone servers
// own every session already.
//
// The move is ordered even when this server owns the session already: it
// is the reconnect's revalidation, as ZooKeeper's leader revalidates a
// reconnecting session. Applying it touches the session on every replica,
// the leader's included, so a client is never told its session lives on
// the strength of this server's word alone (serving.go), and a move a
// server the client gave up on proposed meanwhile fails instead of taking
// the session away again.
func (c *conn) claimSession(id int64) zkproto.Code {
	r, ok := c.s.pipe.(*replicated)
	if !ok {
		return zkproto.OK
	}
	c.s.treeMu.RLock()
	owner := r.owners[id]
	c.s.treeMu.RUnlock()
	result := make(chan zkproto.Code, 1)
	if !c.s.pipe.submit(&proposal{move: id, moveFrom: owner, conn: c,
		applied: func(res txn.Result, _ *txn.Entry) { result <- res.Err }}) {
		return zkproto.ErrConnectionLoss
	}
	select {
	case code := <-result:
		return code
	case <-c.done:
		return zkproto.ErrConnectionLoss
	}
}

// moveBody encodes a move of session id away from owner from.
func moveBody(id int64, from gpaxos.ID) []byte {
	b := binary.BigEndian.AppendUint64([]byte{bodyMove}, uint64(id))
	return binary.BigEndian.AppendUint64(b, uint64(from))
}

// applyMove applies a committed move; the tree lock is held.
func (r *replicated) applyMove(c *replica.Committed) {
	var res txn.Result
	if len(c.Body) != 17 {
		r.s.log.Error("malformed session move entry", "zxid", c.Zxid)
		res.Err = zkproto.ErrBadArguments
		r.complete(c, res, nil)
		return
	}
	id, from := int64(binary.BigEndian.Uint64(c.Body[1:])), gpaxos.ID(binary.BigEndian.Uint64(c.Body[9:]))
	switch {
	case !r.hasSession(id):
		res.Err = zkproto.ErrSessionExpired
	case r.owners[id] != from:
		res.Err = zkproto.ErrSessionMoved // moved elsewhere since this was proposed
	default:
		r.owners[id] = c.Origin
		r.s.sessions.Touch(id, time.Now())
	}
	r.complete(c, res, nil)
}

// movedAway reports whether e, a write proposed by origin, belongs to a
// session that has moved to another server since. Session creation and
// closing are not client requests of the session in this sense (the
// leader closes expired sessions wherever they are connected).
func (r *replicated) movedAway(e *txn.Entry, origin gpaxos.ID) bool {
	switch e.Op.Kind {
	case txn.KindCreateSession, txn.KindCloseSession, txn.KindDeleteContainer, txn.KindNoop:
		return false
	}
	owner, ok := r.owners[e.Session]
	return ok && owner != origin
}

// refuseMoved refuses a write of a session that has moved to another
// server. If it came through a connection of this server, that connection
// is closed rather than answered, as ZooKeeper does (ZOOKEEPER-710): the
// client learns of a lost connection, reconnects, and its session is
// claimed again, instead of an application seeing SESSIONMOVED. The tree
// lock is held.
func (r *replicated) refuseMoved(c *replica.Committed, e *txn.Entry) {
	if c.Origin == r.s.cfg.ServerID {
		if conn := r.s.connOfSession(e.Session); conn != nil {
			conn.close("session moved to another server")
		}
	}
	r.complete(c, txn.Result{Err: zkproto.ErrSessionMoved}, e)
}

// trackOwner keeps the table in step with session creation and closing.
func (r *replicated) trackOwner(e *txn.Entry, res txn.Result, origin gpaxos.ID) {
	switch e.Op.Kind {
	case txn.KindCreateSession:
		if res.Err == zkproto.OK {
			r.owners[e.Session] = origin
		}
	case txn.KindCloseSession:
		delete(r.owners, e.Session)
	}
}

// ownersMagic starts the owner table in a replicated snapshot's data,
// ahead of the tree's snapshot. Data without it (snapshots written before
// the table existed) has an empty table: every session's next reconnect
// claims it.
var ownersMagic = []byte("GSO1")

// appendOwners encodes the table, sorted by session for determinism.
func appendOwners(b []byte, owners map[int64]gpaxos.ID) []byte {
	b = append(b, ownersMagic...)
	b = binary.AppendUvarint(b, uint64(len(owners)))
	ids := make([]int64, 0, len(owners))
	for id := range owners {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.AppendUvarint(b, uint64(owners[id]))
	}
	return b
}

// errBadOwners reports a malformed owner table.
var errBadOwners = errors.New("malformed session owner table in snapshot")

// splitOwners decodes the owner table at the start of data, if any, and
// returns it with the rest (the tree's snapshot).
func splitOwners(data []byte) (map[int64]gpaxos.ID, []byte, error) {
	owners := map[int64]gpaxos.ID{}
	if !bytes.HasPrefix(data, ownersMagic) {
		return owners, data, nil
	}
	b := data[len(ownersMagic):]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b))/9 {
		return nil, nil, errBadOwners
	}
	b = b[k:]
	for range n {
		if len(b) < 9 {
			return nil, nil, errBadOwners
		}
		id := int64(binary.BigEndian.Uint64(b))
		o, k := binary.Uvarint(b[8:])
		if k <= 0 {
			return nil, nil, errBadOwners
		}
		owners[id] = gpaxos.ID(o)
		b = b[8+k:]
	}
	return owners, b, nil
}

// hasSession reports whether the tree has session id; the tree lock is held.
func (r *replicated) hasSession(id int64) bool {
	_, ok := r.s.tree.Session(id)
	return ok
}
