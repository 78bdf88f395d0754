package hc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Sequencer is Chubby's sequencer for a lock of the service: the lock, the
// worker ensemble that granted the hold, and the hold's generation. The
// generation of a lock grows with every acquire and is carried when the
// lock moves, so it strictly increases over the lock's whole life: a
// service that remembers the largest generation it has seen per lock and
// refuses smaller ones fences off every earlier holder.
type Sequencer struct {
	Lock       string
	Cluster    string
	Generation int64
}

const sequencerPrefix = "hcseq1"

// ErrBadSequencer is returned by ParseSequencer for a malformed string.
var ErrBadSequencer = errors.New("hc: malformed sequencer")

// String encodes the sequencer as "hcseq1:<cluster>:<generation>:<lock>"
// (the lock last: it may contain colons).
func (s Sequencer) String() string {
	return fmt.Sprintf("%s:%s:%d:%s", sequencerPrefix, s.Cluster, s.Generation, s.Lock)
}

// ParseSequencer decodes what Sequencer.String encoded; the input comes
// from another process, so every field is checked.
func ParseSequencer(s string) (Sequencer, error) {
	parts := strings.SplitN(s, ":", 4)
	if len(parts) != 4 || parts[0] != sequencerPrefix {
		return Sequencer{}, ErrBadSequencer
	}
	if layout.CheckClusterID(parts[1]) != nil {
		return Sequencer{}, fmt.Errorf("%w: cluster %q", ErrBadSequencer, parts[1])
	}
	gen, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || gen <= 0 {
		return Sequencer{}, fmt.Errorf("%w: generation %q", ErrBadSequencer, parts[2])
	}
	if layout.CheckPath(parts[3]) != nil {
		return Sequencer{}, fmt.Errorf("%w: lock %q", ErrBadSequencer, parts[3])
	}
	return Sequencer{Lock: parts[3], Cluster: parts[1], Generation: gen}, nil
}

// Validate reports whether the hold seq names is still in force: its
// holder node exists on the worker that granted it. The node goes when the
// hold is released or its session ends, and a lock moves only when it has
// no holder, so a sequencer of a lock that has since moved is invalid too;
// a lock that comes back to a worker does so with larger generations, so
// an old sequencer never matches again. A sync is pipelined before the
// read, so a release that completed before the call is always seen.
func (c *Client) Validate(ctx context.Context, seq Sequencer) (bool, error) {
	if seq.Generation <= 0 || layout.CheckPath(seq.Lock) != nil || layout.CheckClusterID(seq.Cluster) != nil {
		return false, nil
	}
	for {
		ws, err := c.pool.Get(ctx, seq.Cluster)
		if err != nil {
			return false, err
		}
		node := layout.HolderPath(seq.Lock, seq.Generation)
		sync := ws.Conn.SyncAsync(layout.WorkerLockPath(seq.Lock))
		exists := ws.Conn.ExistsAsync(node)
		if _, err := sync.Wait(ctx); err != nil && !errors.Is(err, zkproto.ErrNoNode) && !isConnLoss(err) && !isSessionEnd(err) {
			return false, err
		}
		res, err := exists.Wait(ctx)
		switch {
		case err == nil:
			return res.Stat != nil && res.Stat.EphemeralOwner != 0, nil
		case isConnLoss(err), isSessionEnd(err):
			if err := sleep(ctx, retryPause); err != nil {
				return false, err
			}
		default:
			return false, err
		}
	}
}
