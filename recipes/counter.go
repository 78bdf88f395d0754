package recipes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Counter is a shared integer in kazoo's Counter layout: the value is the
// node's data as decimal text (empty data reads as 0), and a change is a
// read followed by a set conditioned on the version read, retried when
// another client changed it in between. A kazoo Counter on the same path
// (default 0) shares it.
type Counter struct {
	conn    *client.Conn
	path    string
	ensured bool
}

// ErrCounterUncertain is returned by Add when the connection was lost while
// the set was in flight: the change may or may not have been applied
// (retrying could apply it twice), so the caller decides.
var ErrCounterUncertain = errors.New("recipes: counter change lost in flight; it may have been applied")

// NewCounter returns the counter at path; the node is created on first use.
func NewCounter(conn *client.Conn, path string) *Counter {
	return &Counter{conn: conn, path: path}
}

// Value returns the counter's value and the version it was read at.
func (c *Counter) Value(ctx context.Context) (int64, error) {
	v, _, err := c.read(ctx)
	return v, err
}

func (c *Counter) read(ctx context.Context) (int64, int32, error) {
	if !c.ensured {
		if err := ensurePath(ctx, c.conn, c.path, zkproto.OpenACLUnsafe); err != nil {
			return 0, 0, err
		}
		c.ensured = true
	}
	for {
		data, st, err := c.conn.Get(ctx, c.path)
		if isConnLoss(err) {
			if err := pause(ctx, retryBackoff); err != nil {
				return 0, 0, err
			}
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		if len(data) == 0 {
			return 0, st.Version, nil
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("recipes: counter %s holds %q, not an integer", c.path, data)
		}
		return v, st.Version, nil
	}
}

// Add adds delta atomically and returns the values before and after.
func (c *Counter) Add(ctx context.Context, delta int64) (pre, post int64, err error) {
	for {
		pre, version, err := c.read(ctx)
		if err != nil {
			return 0, 0, err
		}
		post = pre + delta
		_, err = c.conn.Set(ctx, c.path, []byte(strconv.FormatInt(post, 10)), version)
		switch {
		case err == nil:
			return pre, post, nil
		case errors.Is(err, zkproto.ErrBadVersion):
			continue // changed since we read it: read again
		case isConnLoss(err):
			return pre, post, ErrCounterUncertain
		default:
			return 0, 0, err
		}
	}
}
