package sessions

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"slices"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Owners is the replicated table of session owners (ZooKeeper's
// SESSIONMOVED).
//
// A client's requests reach the log through the server it is connected
// to. When the client loses that connection and reconnects to another
// server, requests it sent through the first one may still be on their way
// to the leader (queued behind a partition, say) and would be ordered after
// the ones it sends through the second: a delete retried after a lost
// answer could then land after another client took over the node, and the
// session's own requests would no longer be in the order it sent them.
//
// So every replica keeps, for each session, the server its requests may
// come from: the one that created it, then the one it last reconnected
// through. A reconnect through another server first orders a move entry
// and answers the handshake only once it is applied; a write of the
// session proposed by any other server and ordered after the move is
// refused with SESSIONMOVED, on every replica alike. The move is ordered
// even when the server owns the session already: it is the reconnect's
// revalidation, and applying it touches the session on every replica, the
// leader's included, so a client is never told its session lives on the
// strength of one server's word. The table is part of the replicated state
// and of its snapshots. It is not safe for concurrent use.
//
// The table also keeps, for each session, the zxid of its last move, which
// decides whether the leader's expiry of it takes effect (ExpiryCounts).
type Owners struct {
	m     map[int64]gpaxos.ID
	moved map[int64]uint64 // zxid of the session's last move applied
}

// NewOwners returns an empty table.
func NewOwners() *Owners { return &Owners{m: map[int64]gpaxos.ID{}, moved: map[int64]uint64{}} }

// Clone returns a copy of the table that changes independently of o.
func (o *Owners) Clone() *Owners {
	return &Owners{m: maps.Clone(o.m), moved: maps.Clone(o.moved)}
}

// Of returns the owner of session id (None when none is recorded).
func (o *Owners) Of(id int64) gpaxos.ID { return o.m[id] }

// Len returns the number of sessions with an owner.
func (o *Owners) Len() int { return len(o.m) }

// Track keeps the table in step with e, applied with res, proposed by
// origin: a session created is owned by its creator, a closed one by
// nobody.
func (o *Owners) Track(e *txn.Entry, res txn.Result, origin gpaxos.ID) {
	switch e.Op.Kind {
	case txn.KindCreateSession:
		if res.Err == zkproto.OK {
			o.m[e.Session] = origin
		}
	case txn.KindCloseSession:
		delete(o.m, e.Session)
		delete(o.moved, e.Session)
	}
}

// MovedAway reports whether e, a write proposed by origin, belongs to a
// session that has moved to another server since: it must be refused
// with SESSIONMOVED. Session creation and closing are not client requests
// of the session in this sense (the leader closes expired sessions
// wherever they are connected).
func (o *Owners) MovedAway(e *txn.Entry, origin gpaxos.ID) bool {
	switch e.Op.Kind {
	case txn.KindCreateSession, txn.KindCloseSession, txn.KindDeleteContainer, txn.KindNoop, txn.KindNamespaces:
		return false
	}
	owner, ok := o.m[e.Session]
	return ok && owner != origin
}

// Move applies a committed move of session id to origin, proposed while
// from owned it, at zxid at; exists says whether the session is in the
// tree. OK moves it (the caller touches the session); SESSIONEXPIRED: the
// session ended first; SESSIONMOVED: another move was ordered since this
// one was proposed (a move that arrives late, from a server the client
// gave up on during its handshake, must not take the session from the
// server the client is on).
func (o *Owners) Move(id int64, from, origin gpaxos.ID, exists bool, at uint64) zkproto.Code {
	switch {
	case !exists:
		return zkproto.ErrSessionExpired
	case o.m[id] != from:
		return zkproto.ErrSessionMoved
	}
	o.m[id] = origin
	o.moved[id] = at
	return zkproto.OK
}

// ExpiryCounts reports whether the leader's expiry of session id, decided
// when it had applied up to zxid decidedAt and committed at zxid
// committedAt, takes effect. Every replica decides alike from the log:
//
//   - Only in the epoch it was decided in. The leader that decides is the
//     one the touches of that epoch reach; a deposed leader, which no
//     longer hears them, can still decide an expiry from its stale clocks,
//     and its proposal, handed on to the next leader like any other, would
//     otherwise end a session whose client is still connected and touched
//     through the new leader.
//   - Not after a move of the session the leader had not applied when it
//     decided. A move is the reconnect's revalidation: its client is told
//     its session lives (and its ephemeral nodes with it) once the move is
//     applied. A move ordered before the expiry but applied by the leader
//     only after deciding it would otherwise be followed at once by the
//     expiry: the client, told it still holds its locks by a server that
//     has not applied the expiry yet, would hold them while another client
//     takes them, as ZooKeeper prevents by refusing to revalidate a session
//     its leader is closing.
//
// An expiry that does not count changes nothing; the leader decides again
// from its clocks, which the move touched.
func (o *Owners) ExpiryCounts(id int64, decidedAt, committedAt uint64) bool {
	return decidedAt>>32 == committedAt>>32 && o.moved[id] <= decidedAt
}

// AppendMove encodes a move of session id away from owner from after b
// (the caller's own prefix): 8 bytes each.
func AppendMove(b []byte, id int64, from gpaxos.ID) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	return binary.BigEndian.AppendUint64(b, uint64(from))
}

// ParseMove decodes what AppendMove wrote; ok is false for anything else.
func ParseMove(b []byte) (id int64, from gpaxos.ID, ok bool) {
	if len(b) != 16 {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), gpaxos.ID(binary.BigEndian.Uint64(b[8:])), true
}

// ownersMagic starts the table in a replicated snapshot's data, ahead of
// the tree's snapshot: each session with its owner and the zxid of its last
// move. ownersMagicV1 starts tables without the zxids (read as no move).
// Data without either (snapshots written before the table existed) has an
// empty table: every session's next reconnect claims it.
var (
	ownersMagic   = []byte("GSO2")
	ownersMagicV1 = []byte("GSO1")
)

// AppendTo encodes the table after b, sorted by session for determinism.
func (o *Owners) AppendTo(b []byte) []byte {
	b = append(b, ownersMagic...)
	b = binary.AppendUvarint(b, uint64(len(o.m)))
	ids := make([]int64, 0, len(o.m))
	for id := range o.m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.AppendUvarint(b, uint64(o.m[id]))
		b = binary.AppendUvarint(b, o.moved[id])
	}
	return b
}

// ErrBadOwners reports a malformed owner table.
var ErrBadOwners = errors.New("malformed session owner table in snapshot")

// SplitOwners decodes the table at the start of data, if any, and returns
// it with the rest (the tree's snapshot).
func SplitOwners(data []byte) (*Owners, []byte, error) {
	o := NewOwners()
	withMoves := bytes.HasPrefix(data, ownersMagic)
	if !withMoves && !bytes.HasPrefix(data, ownersMagicV1) {
		return o, data, nil
	}
	b := data[len(ownersMagic):]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b))/9 {
		return nil, nil, ErrBadOwners
	}
	b = b[k:]
	for range n {
		if len(b) < 9 {
			return nil, nil, ErrBadOwners
		}
		id := int64(binary.BigEndian.Uint64(b))
		owner, k := binary.Uvarint(b[8:])
		if k <= 0 {
			return nil, nil, ErrBadOwners
		}
		o.m[id] = gpaxos.ID(owner)
		b = b[8+k:]
		if withMoves {
			at, k := binary.Uvarint(b)
			if k <= 0 {
				return nil, nil, ErrBadOwners
			}
			if at != 0 {
				o.moved[id] = at
			}
			b = b[k:]
		}
	}
	return o, b, nil
}
