package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/giraffe-coord/giraffe/internal/members"
)

// PathNamespaces is where a server's metrics port serves its namespaces'
// status (GET, no token: NamespacesStatus).
const PathNamespaces = "/namespaces"

// The states of a namespace on one server.
const (
	// StateHealthy: the namespace is served.
	StateHealthy = "healthy"
	// StateQuarantined: the server found the namespace's data damaged and
	// could not rebuild it; it answers DATAINCONSISTENCY for every request
	// that names a path in it, and serves the other namespaces.
	StateQuarantined = "quarantined"
	// StateRepairing: the server, an ensemble member, lost its durable
	// state at start and has not yet been registered anew and applied
	// everything the ensemble had committed by then; it reports every
	// namespace so until it has. What it holds meanwhile is a prefix of
	// the ensemble's history, never a state the ensemble did not have.
	StateRepairing = "repairing"
)

// NamespacesStatus is one server's view of its namespaces, read at one
// applied zxid.
type NamespacesStatus struct {
	// ID is the answering server (0 for a standalone server).
	ID members.ID `json:"id"`
	// AppliedZxid is the last entry the server had applied when it read
	// the namespaces.
	AppliedZxid int64 `json:"applied_zxid"`
	// Namespaces are the declared namespaces, sorted by name, then the
	// default namespace.
	Namespaces []NamespaceStatus `json:"namespaces"`
}

// NamespaceStatus is one namespace on one server.
type NamespaceStatus struct {
	// Name is the root's name ("2"); "" for the default namespace.
	Name string `json:"name"`
	// Root is the root's path ("/2"; "/" for the default namespace).
	Root  string `json:"root"`
	Level string `json:"level"` // strong or weak
	State string `json:"state"` // StateHealthy, StateQuarantined or StateRepairing
	// QuarantinedSince is, for a quarantined namespace, the zxid of the
	// first entry it missed; Reason says what was damaged.
	QuarantinedSince int64  `json:"quarantined_since,omitempty"`
	Reason           string `json:"reason,omitempty"`
	// LastZxid is the last applied entry that changed the namespace (see
	// docs/namespaces.md): replicas that report the same LastZxid for a
	// namespace hold the same namespace and report the same Digest.
	LastZxid int64 `json:"last_zxid"`
	// Nodes counts the namespace's znodes, its root included.
	Nodes int `json:"nodes"`
	// Digest is the sum of the namespace's node hashes, the hashes the
	// tree digest adds up, as 16 hex digits.
	Digest string `json:"digest"`
}

// Namespaces returns the namespaces' status of the server whose metrics
// port (or admin listener) is addr.
func (c Client) Namespaces(ctx context.Context, addr string) (NamespacesStatus, error) {
	var st NamespacesStatus
	code, raw, err := c.do(ctx, http.MethodGet, addr, PathNamespaces, "", nil)
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("namespaces at %s: %d %s: %s", addr, code, http.StatusText(code), bytes.TrimSpace(raw))
	}
	return st, json.Unmarshal(raw, &st)
}
