package server

import (
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/sessions"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Session ownership: the replicated table is sessions.Owners (which
// explains why it exists); here, a reconnect's claim on a session and the
// apply side of moves and of writes of sessions that moved.

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
	owner := r.owners.Of(id)
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
	return sessions.AppendMove([]byte{bodyMove}, id, from)
}

// applyMove applies a committed move; the tree lock is held.
func (r *replicated) applyMove(c *replica.Committed) {
	id, code, ok := stepMove(r.s.tree, r.owners, c.Body[1:], c.Origin, uint64(c.Zxid))
	switch {
	case !ok:
		r.s.log.Error("malformed session move entry", "zxid", c.Zxid)
	case code == zkproto.OK:
		r.s.sessions.Touch(id, time.Now())
	}
	r.complete(c, txn.Result{Err: code}, nil)
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
