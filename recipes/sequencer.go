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

// Sequencer is Chubby's sequencer: an opaque-looking token a lock holder
// passes to another service with each request it makes under the lock, so
// that the service can refuse requests from a holder that has since lost
// the lock (a paused process, a delayed message).
//
// A hold is one lock node: Path is that node and Generation its czxid. A
// node's czxid is unique within the ensemble's history, and every hold
// creates a fresh node, so (Path, Generation) names one hold and no later
// hold can ever match it, even on the same path.
type Sequencer struct {
	// Path is the lock node of the hold.
	Path string
	// Mode is the mode of the hold.
	Mode Mode
	// Generation is the czxid of the lock node.
	Generation int64
}

// sequencerPrefix starts every encoded sequencer, so that a service can
// tell a sequencer from other strings and its version.
const sequencerPrefix = "zkseq1"

// String encodes the sequencer as "zkseq1:<mode>:<generation>:<path>"; the
// path comes last because it may contain colons.
func (s Sequencer) String() string {
	return fmt.Sprintf("%s:%s:%d:%s", sequencerPrefix, s.Mode, s.Generation, s.Path)
}

// ErrBadSequencer is returned by ParseSequencer for a malformed string.
var ErrBadSequencer = errors.New("recipes: malformed sequencer")

// ErrInvalidSequencer is returned by ValidateSequencer when the hold the
// sequencer names has ended.
var ErrInvalidSequencer = errors.New("recipes: sequencer no longer valid")

// ParseSequencer decodes what Sequencer.String encoded. The input comes
// from another process, so every field is checked.
func ParseSequencer(s string) (Sequencer, error) {
	parts := strings.SplitN(s, ":", 4)
	if len(parts) != 4 || parts[0] != sequencerPrefix {
		return Sequencer{}, ErrBadSequencer
	}
	var seq Sequencer
	switch parts[1] {
	case Exclusive.String():
		seq.Mode = Exclusive
	case Shared.String():
		seq.Mode = Shared
	default:
		return Sequencer{}, fmt.Errorf("%w: mode %q", ErrBadSequencer, parts[1])
	}
	gen, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || gen <= 0 {
		return Sequencer{}, fmt.Errorf("%w: generation %q", ErrBadSequencer, parts[2])
	}
	seq.Generation = gen
	if err := validLockPath(parts[3]); err != nil || parts[3] == "/" {
		return Sequencer{}, fmt.Errorf("%w: path %q", ErrBadSequencer, parts[3])
	}
	seq.Path = parts[3]
	return seq, nil
}

// ValidateSequencer checks that the hold seq names is still in force: its
// lock node exists, is ephemeral, and is the same node (same czxid). It
// returns nil when valid, ErrInvalidSequencer when the hold has ended, or
// the error that prevented the check.
//
// A sync on the node's path is pipelined before the read, so that a
// server that lags the leader (a ZooKeeper follower) answers with a state
// at least as new as the moment ValidateSequencer was called: a release
// that completed before the call is always seen. The check costs one round
// trip.
func ValidateSequencer(ctx context.Context, conn *client.Conn, seq Sequencer) error {
	if seq.Path == "" || seq.Generation <= 0 {
		return ErrInvalidSequencer
	}
	sync := conn.SyncAsync(seq.Path)
	exists := conn.ExistsAsync(seq.Path)
	if _, err := sync.Wait(ctx); err != nil && !errors.Is(err, zkproto.ErrNoNode) {
		return err
	}
	res, err := exists.Wait(ctx)
	if err != nil {
		return err
	}
	st := res.Stat
	if st == nil || st.Czxid != seq.Generation || st.EphemeralOwner == 0 {
		return ErrInvalidSequencer
	}
	return nil
}
