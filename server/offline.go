package server

import "github.com/giraffe-coord/giraffe/internal/sessions"

// Reading an ensemble member's stored data offline, for tools that look
// at (or damage) a stopped member's files; package replica finds these
// bytes inside its own files (replica.SnapshotData, replica.ProposalBody).

// ProposalEntry returns the txn.Entry encoding that a member's proposal
// body carries (a suffix of body): a client's write, or a leader's expiry
// of a session. ok is false for bodies that carry no entry (a touch, a
// sync, a session's move).
func ProposalEntry(body []byte) (entry []byte, ok bool) {
	if len(body) == 0 {
		return nil, false
	}
	switch body[0] {
	case bodyTxn:
		return body[1:], true
	case bodyExpiry:
		_, entry, ok := sessions.ParseExpiry(body[1:])
		return entry, ok
	}
	return nil, false
}

// SnapshotTree returns the data tree's encoding (datatree.WriteSnapshot's
// bytes) inside a member's snapshot data: what follows the sessions'
// owners. It is a suffix of data.
func SnapshotTree(data []byte) ([]byte, error) {
	_, tree, err := sessions.SplitOwners(data)
	return tree, err
}
