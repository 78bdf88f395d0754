package recipes

import (
	"context"
	"errors"
	"slices"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// LockContenders returns the identifiers (node data, see WithIdentifier)
// of the exclusive queue lock's contenders at path, the holder first, as
// kazoo's Lock.contenders() does; the second result is a watch that fires
// when the contenders change. A kazoo Election is this lock with the
// candidate's identifier as data, so the first entry is the elected leader.
func LockContenders(ctx context.Context, conn *client.Conn, path string) ([]string, <-chan client.Event, error) {
	r, err := conn.ChildrenWAsync(path).Wait(ctx)
	if errors.Is(err, zkproto.ErrNoNode) {
		// No contender ever: watch for the path to appear.
		_, w, err := conn.ExistsW(ctx, path)
		return nil, w, err
	}
	if err != nil {
		return nil, nil, err
	}
	type contender struct{ node, seq string }
	var cs []contender
	for _, child := range r.Children {
		if seq, ok := contenderSeq(child, exclusiveBlockers); ok {
			cs = append(cs, contender{child, seq})
		}
	}
	// kazoo orders by the sequence suffix compared as text.
	slices.SortFunc(cs, func(a, b contender) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	var out []string
	for _, c := range cs {
		data, _, err := conn.Get(ctx, joinPath(path, c.node))
		if errors.Is(err, zkproto.ErrNoNode) {
			continue // left meanwhile; the watch fires for it
		}
		if err != nil {
			return nil, nil, err
		}
		out = append(out, string(data))
	}
	return out, r.Watch, nil
}
