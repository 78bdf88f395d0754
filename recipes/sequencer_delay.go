package recipes

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Chubby's lock-delay, on a server that knows nothing of locks.
//
// Chubby's master refuses a lock for a lock-delay after its holder failed,
// so that requests the dead holder sent just before failing drain before
// anyone else acts under the lock. A ZooKeeper server deletes an expired
// holder's ephemeral node at once, and an expired session can write
// nothing, so the delay is arranged by the holders themselves with a
// persistent marker node, <dir>/__lockdelay__:
//
//  1. A new holder, once it owns the lock node and before Lock returns,
//     creates the marker with its session id and the lock-delay it asks
//     for (JSON {"session":"0x…","delay_ms":N}).
//  2. Unlock deletes the lock node and the marker in one multi, so after a
//     clean release the marker is gone.
//  3. A new holder that finds a marker of another session therefore knows
//     that the previous holder's session ended while it held the lock. It
//     overwrites the marker with its own session (a conditional set, which
//     also makes the marker's mtime the server's time of this
//     observation, T0 ≥ the expiry) and then waits, still before Lock
//     returns, for the delay the lost holder asked for, counted from the
//     reply to that set. Since the set was applied at T0 and the reply
//     comes after it, no holder acts under the lock before T0 + delay on
//     the server's clock, and T0 is after the expiry: the delay is honored
//     with no clock comparison between machines, only a local duration.
//     The marker's mtime and data record when and for whom the delay ran.
//
// While the new holder waits, it holds the lock node, so the others stay
// queued behind it. If it too is lost while waiting, its own marker makes
// the next holder wait again. The marker is only ever touched by the
// current exclusive holder, so there is no race on it.
const lockDelayNodeName = "__lockdelay__"

// lockDelayRecord is the marker's data.
type lockDelayRecord struct {
	Session string `json:"session"`
	DelayMs int64  `json:"delay_ms"`
}

// delayMarker is one hold's side of the marker protocol.
type delayMarker struct {
	conn    *client.Conn
	path    string
	delay   time.Duration
	version int32 // version of our marker, or -1 when we have none
	// waited is the delay this hold honored for a lost predecessor (0
	// when the previous holder released cleanly).
	waited time.Duration
	// owing is set while a delay owed to a lost holder has not fully run:
	// a Lock abandoned then must leave the marker, so that the next
	// holder still waits.
	owing bool
}

func newDelayMarker(conn *client.Conn, dir string, delay time.Duration) *delayMarker {
	return &delayMarker{conn: conn, path: joinPath(dir, lockDelayNodeName), delay: delay, version: -1}
}

func (d *delayMarker) record() []byte {
	b, _ := json.Marshal(lockDelayRecord{Session: sessionHex(d.conn.SessionID()), DelayMs: d.delay.Milliseconds()})
	return b
}

func sessionHex(id int64) string { return "0x" + formatHex(uint64(id)) }

func formatHex(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b[:])
}

// acquired runs the marker protocol after the lock node was obtained and
// before Lock returns. On an error the caller releases the lock node.
func (d *delayMarker) acquired(ctx context.Context, acl []zkproto.ACL) error {
	d.version, d.waited, d.owing = -1, 0, false
	// owed is the delay owed to a lost holder once one was seen (-1:
	// none seen). It survives the retries, because after a connection
	// loss our set may have happened and the marker then looks like ours.
	owed := time.Duration(-1)
	for {
		_, st, err := d.conn.Create(ctx, d.path, d.record(), client.Persistent, acl)
		switch {
		case err == nil:
			d.version = st.Version
			return d.honor(ctx, owed)
		case isConnLoss(err):
			if err := pause(ctx, retryBackoff); err != nil {
				return err
			}
			continue
		case !errors.Is(err, zkproto.ErrNodeExists):
			return err
		}
		data, st, err := d.conn.Get(ctx, d.path)
		if errors.Is(err, zkproto.ErrNoNode) || isConnLoss(err) {
			continue
		}
		if err != nil {
			return err
		}
		var prev lockDelayRecord
		if json.Unmarshal(data, &prev) != nil {
			// An unreadable marker: assume our own delay.
			owed = max(owed, d.delay)
		} else if prev.Session != sessionHex(d.conn.SessionID()) {
			owed = max(owed, min(max(time.Duration(prev.DelayMs)*time.Millisecond, 0), MaxLockDelay))
		}
		// Otherwise the marker is ours: a create or set whose reply was
		// lost, or a hold of this live session whose release did not
		// remove it; no delay is owed for it.
		st2, err := d.conn.Set(ctx, d.path, d.record(), st.Version)
		switch {
		case err == nil:
			d.version = st2.Version
			return d.honor(ctx, owed)
		case isConnLoss(err), errors.Is(err, zkproto.ErrBadVersion):
			if err := pause(ctx, retryBackoff); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// honor waits the delay owed to a lost holder, counted from the reply to
// the write that made the marker ours (which the caller has just seen).
func (d *delayMarker) honor(ctx context.Context, owed time.Duration) error {
	if owed < 0 {
		return nil
	}
	d.owing = true
	if err := pause(ctx, owed); err != nil {
		return err
	}
	d.owing = false
	d.waited = owed
	return nil
}

// abandon releases the lock node of a Lock that failed after obtaining
// it. The marker goes too, unless a lost holder's delay is still owed:
// then it stays (naming our live session), and the next holder waits the
// delay again rather than not at all.
func (d *delayMarker) abandon(node string) {
	if d.version >= 0 && !d.owing {
		d.conn.MultiAsync(client.DeleteOp(d.path, d.version), client.DeleteOp(node, client.AnyVersion))
	} else {
		deleteInBackground(d.conn, node)
	}
	d.version = -1
}

// release deletes the lock node and our marker atomically. mine is as
// for deleteNode.
func (d *delayMarker) release(ctx context.Context, node string, mine ownedFunc) error {
	if d.version < 0 {
		return deleteNode(ctx, d.conn, node, mine)
	}
	version := client.AnyVersion
	for {
		_, err := d.conn.Multi(ctx, client.DeleteOp(d.path, d.version), client.DeleteOp(node, version))
		switch {
		case err == nil:
			d.version = -1
			return nil
		case isConnLoss(err):
			if err := pause(ctx, retryBackoff); err != nil {
				return err
			}
			if mine == nil {
				continue
			}
			// The multi may have been applied and the name taken by a new
			// holder since: retry only on the version that is still ours.
			st, err := stillMine(ctx, mine)
			if err != nil {
				return err
			}
			if st == nil {
				return d.dropMarker(ctx)
			}
			version = st.Version
		case errors.Is(err, zkproto.ErrNoNode), errors.Is(err, zkproto.ErrBadVersion):
			// A retried multi that had been applied, or a marker
			// someone else changed: remove what is ours one by one.
			if err := d.dropMarker(ctx); err != nil {
				return err
			}
			return deleteNode(ctx, d.conn, node, mine)
		default:
			return err
		}
	}
}

// dropMarker deletes our version of the marker, if it is still there.
func (d *delayMarker) dropMarker(ctx context.Context) error {
	if err := d.conn.Delete(ctx, d.path, d.version); err != nil &&
		!errors.Is(err, zkproto.ErrNoNode) && !errors.Is(err, zkproto.ErrBadVersion) {
		return err
	}
	d.version = -1
	return nil
}

// deleteNode deletes a lock node, retrying after connection loss; a node
// already gone counts as deleted.
//
// A retry must not delete somebody else's node: the first delete may have
// happened before the connection broke, and a lock whose node name is
// reused (a test-and-set lock's) may by now have a new holder under the
// same name. For such nodes mine is given: after a connection loss it
// reports, from a synced read, whether the node is still ours, and the
// retry deletes only that version of it. Nodes whose names are never
// reused (sequential ones) pass nil and are deleted by name.
func deleteNode(ctx context.Context, conn *client.Conn, node string, mine ownedFunc) error {
	version := client.AnyVersion
	for {
		err := conn.Delete(ctx, node, version)
		switch {
		case err == nil, errors.Is(err, zkproto.ErrNoNode):
			return nil
		case isConnLoss(err), errors.Is(err, zkproto.ErrBadVersion):
			if err := pause(ctx, retryBackoff); err != nil {
				return err
			}
			if mine == nil {
				continue
			}
			st, err := stillMine(ctx, mine)
			if err != nil || st == nil {
				return err
			}
			version = st.Version
		default:
			return err
		}
	}
}

// ownedFunc reports the stat of a lock node if it exists and is ours, or
// nil if it is gone or belongs to someone else.
type ownedFunc func(ctx context.Context) (*zkproto.Stat, error)

// stillMine asks mine, retrying through connection loss.
func stillMine(ctx context.Context, mine ownedFunc) (*zkproto.Stat, error) {
	for {
		st, err := mine(ctx)
		if err == nil || !isConnLoss(err) {
			return st, err
		}
		if err := pause(ctx, retryBackoff); err != nil {
			return nil, err
		}
	}
}
