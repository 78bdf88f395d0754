package replica

import (
	"path/filepath"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// Reading a replica directory offline, for tools that look at (or damage)
// a stopped member's files: where they are and what the application's
// bytes are inside them. LogDir is the log's directory.

// SnapshotDir returns where the replica whose directory is dir keeps its
// snapshots (package snap).
func SnapshotDir(dir string) string { return filepath.Join(dir, "snapshots") }

// SnapshotData returns the application's data inside the body of one of
// the replica's snapshot files: what follows the configuration recorded
// with it. It is a suffix of body.
func SnapshotData(body []byte) ([]byte, error) {
	_, data, err := splitSnapshot(body)
	return data, err
}

// ProposalBody returns the application's proposal body that a record of
// the replica's log carries (a suffix of payload): ok is false for a
// record that is not a proposal (a no-op, a configuration change) or is
// too short to be one.
func ProposalBody(payload []byte) (body []byte, ok bool) {
	if len(payload) < 1 || gpaxos.EntryType(payload[0]) != gpaxos.EntryNormal {
		return nil, false
	}
	_, body, err := parseHeader(payload[1:])
	return body, err == nil
}
