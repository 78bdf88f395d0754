package recipes

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// DoubleBarrier is the ZooKeeper paper's double barrier (§2.4) in kazoo's
// layout (kazoo.recipe.barrier.DoubleBarrier): Enter blocks until N
// participants have entered, Leave blocks until all of them have left, so
// that they start and finish a computation together.
//
// Each participant is an ephemeral child of the barrier node named by a
// random hex id (kazoo's uuid4().hex) holding its identifier. The one whose
// entry makes the count reach N creates the child "ready", on whose
// creation the others wait. Leaving, each participant deletes "ready", then,
// with the children sorted, the lowest waits for the highest to go and the
// others delete themselves and wait for the lowest, until none is left. A
// kazoo DoubleBarrier on the same path with the same N is the same barrier.
type DoubleBarrier struct {
	conn *client.Conn
	path string
	n    int
	id   []byte
	name string // our child
}

// readyNode is the child that opens a double barrier.
const readyNode = "ready"

// NewDoubleBarrier returns a participant of the double barrier at path
// that opens when n participants have entered. identifier is stored in
// the participant's node (kazoo's default is host-pid; empty gives that).
func NewDoubleBarrier(conn *client.Conn, path string, n int, identifier string) *DoubleBarrier {
	if identifier == "" {
		host, _ := os.Hostname()
		identifier = host + "-" + strconv.Itoa(os.Getpid())
	}
	return &DoubleBarrier{conn: conn, path: path, n: n, id: []byte(identifier), name: newContenderPrefix()}
}

// Enter joins the barrier and blocks until n participants have joined or
// ctx ends. Connection loss is retried; the participant's node is
// ephemeral, so a session that expires leaves the barrier (and Enter
// returns the error).
//
// The watch on "ready" is set before the participant's node is created,
// as in ZooKeeper's recipe: the barrier cannot open without the node, so
// the watch sees "ready" created even when the others, leaving, delete it
// again before this participant looks. kazoo creates the node first, and
// a participant slow between the two steps then waits for ever.
func (b *DoubleBarrier) Enter(ctx context.Context) error {
	if err := ensurePath(ctx, b.conn, b.path, zkproto.OpenACLUnsafe); err != nil {
		return err
	}
	me, ready := joinPath(b.path, b.name), joinPath(b.path, readyNode)
	for {
		st, w, err := b.conn.ExistsW(ctx, ready)
		if err == nil {
			_, _, err = b.conn.Create(ctx, me, b.id, client.Ephemeral, zkproto.OpenACLUnsafe)
			if errors.Is(err, zkproto.ErrNodeExists) { // ours: the name is unique
				err = nil
			}
		}
		if err == nil && st != nil {
			return nil // open already
		}
		var kids []string
		if err == nil {
			kids, _, err = b.conn.Children(ctx, b.path)
		}
		if err == nil {
			if len(kids) < b.n {
				err = waitEvent(ctx, w)
				if err == nil {
					return nil
				}
			} else {
				return ensurePath(ctx, b.conn, ready, zkproto.OpenACLUnsafe)
			}
		}
		if !isConnLoss(err) {
			return err
		}
		if err := pause(ctx, retryBackoff); err != nil {
			return err
		}
	}
}

// Leave leaves the barrier and blocks until every participant has left or
// ctx ends.
func (b *DoubleBarrier) Leave(ctx context.Context) error {
	for {
		err := b.leave(ctx)
		if err == nil || !isConnLoss(err) {
			return err
		}
		if err := pause(ctx, retryBackoff); err != nil {
			return err
		}
	}
}

// leave is kazoo's leave loop; it returns once everyone has left.
func (b *DoubleBarrier) leave(ctx context.Context) error {
	me := joinPath(b.path, b.name)
	if err := b.conn.Delete(ctx, joinPath(b.path, readyNode), client.AnyVersion); err != nil && !errors.Is(err, zkproto.ErrNoNode) {
		return err
	}
	for {
		kids, _, err := b.conn.Children(ctx, b.path)
		if err != nil {
			return err
		}
		// A participant still entering may create "ready" again; it is not
		// a participant.
		kids = slices.DeleteFunc(kids, func(k string) bool { return k == readyNode })
		if len(kids) == 0 {
			return nil
		}
		if len(kids) == 1 && kids[0] == b.name {
			if err := b.conn.Delete(ctx, me, client.AnyVersion); err != nil && !errors.Is(err, zkproto.ErrNoNode) {
				return err
			}
			return nil
		}
		slices.Sort(kids)
		wait := kids[0]
		if b.name == kids[0] {
			// Lowest: wait for the highest to go.
			wait = kids[len(kids)-1]
		} else if err := b.conn.Delete(ctx, me, client.AnyVersion); err != nil && !errors.Is(err, zkproto.ErrNoNode) {
			return err
		}
		st, w, err := b.conn.ExistsW(ctx, joinPath(b.path, wait))
		if err != nil {
			return err
		}
		if st == nil {
			continue
		}
		if err := waitEvent(ctx, w); err != nil {
			return err
		}
	}
}
