// Package layout is the znode layout of the hierarchical lock service
// (docs/hierarchical-locks.md): where the master ensemble keeps the lock →
// worker map, the lock counts, the registry of worker ensembles and the
// moves in progress, where a worker ensemble keeps its locks, and the JSON
// records those znodes hold. The client library (package hc), the master
// daemon (hc/master) and the tools read and write the service only through
// these names and records.
//
// Master ensemble:
//
//	/hc/clusters/<cid>           Cluster: a worker ensemble, active or standby
//	/hc/placement/<cid>/<enc>    one empty child per lock placed on <cid>;
//	                             numChildren of /hc/placement/<cid> is its lock count
//	/hc/ns                       Node of the root domain "/"
//	/hc/ns<path>                 Node of a domain or a lock (same tree as the names)
//	/hc/moves/<enc>              Move: a move of the lock in progress, by phase
//	/hc/daemon/election          the daemons' election (kazoo's Election layout)
//
// Worker ensemble:
//
//	/hc/locks/<enc>              WorkerLock: the lock's copy on this worker
//	/hc/locks/<enc>/h-<gen>      ephemeral: the hold that got generation <gen>
//
// <enc> is a lock path flattened into one znode name (Encode), so that a
// worker needs no intermediate nodes and a lock's znodes are named alike
// everywhere.
package layout

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// Root is the znode under which the service keeps everything, on the
// master and on every worker (one ensemble may be both).
const Root = "/hc"

// Master ensemble directories.
const (
	ClustersDir  = Root + "/clusters"
	PlacementDir = Root + "/placement"
	NamesRoot    = Root + "/ns"
	MovesDir     = Root + "/moves"
	DaemonDir    = Root + "/daemon"
	// ElectionPath is where the master daemons campaign.
	ElectionPath = DaemonDir + "/election"
)

// LocksDir is the worker ensemble's directory of locks.
const LocksDir = Root + "/locks"

// MaxPathBytes bounds a lock or domain path, so that every znode named
// after one stays small.
const MaxPathBytes = 1024

// ErrBadPath is returned for a malformed lock or domain path.
var ErrBadPath = errors.New("hc: malformed lock path")

// ErrBadRecord is returned for a znode whose data is not the record its
// place in the layout calls for.
var ErrBadRecord = errors.New("hc: malformed record")

// CheckPath validates a lock or domain path: a valid ZooKeeper path other
// than "/", at most MaxPathBytes long. Its components before the last are
// its domains.
func CheckPath(p string) error {
	if p == "/" || len(p) > MaxPathBytes {
		return fmt.Errorf("%w: %q", ErrBadPath, p)
	}
	if err := zkproto.ValidatePath(p, false); err != nil {
		return fmt.Errorf("%w: %v", ErrBadPath, err)
	}
	return nil
}

// Domain returns the domain of a lock or domain path: the path without its
// last component ("/" for a top-level name).
func Domain(p string) string { return path.Dir(p) }

// Encode flattens a path into one znode name: the leading '/' is dropped,
// '%' becomes "%25" and '/' becomes "%2F". Decode reverses it.
func Encode(p string) string {
	p = strings.TrimPrefix(p, "/")
	return strings.NewReplacer("%", "%25", "/", "%2F").Replace(p)
}

// Decode reverses Encode.
func Decode(name string) (string, error) {
	var b strings.Builder
	b.WriteByte('/')
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			b.WriteByte(name[i])
			continue
		}
		switch {
		case strings.HasPrefix(name[i:], "%25"):
			b.WriteByte('%')
		case strings.HasPrefix(name[i:], "%2F"):
			b.WriteByte('/')
		default:
			return "", fmt.Errorf("%w: bad escape in %q", ErrBadPath, name)
		}
		i += 2
	}
	return b.String(), nil
}

// NamePath is the master's znode of a domain or lock path ("/" is the
// root domain).
func NamePath(p string) string {
	if p == "/" {
		return NamesRoot
	}
	return NamesRoot + p
}

// ClusterPath is the master's znode of a worker ensemble.
func ClusterPath(cid string) string { return ClustersDir + "/" + cid }

// PlacementPath is the master's directory of the locks placed on cid.
func PlacementPath(cid string) string { return PlacementDir + "/" + cid }

// PlacementEntry is the child of PlacementPath(cid) that counts lock p.
func PlacementEntry(cid, p string) string { return PlacementPath(cid) + "/" + Encode(p) }

// MovePath is the master's record of a move of lock p in progress.
func MovePath(p string) string { return MovesDir + "/" + Encode(p) }

// WorkerLockPath is a worker's znode of lock p.
func WorkerLockPath(p string) string { return LocksDir + "/" + Encode(p) }

// HolderName is the name of the ephemeral child of a worker's lock znode
// that the hold with generation gen creates. Every hold has its own name,
// so a late release of an ended hold cannot remove a later one.
func HolderName(gen int64) string { return "h-" + strconv.FormatInt(gen, 10) }

// HolderPath is the full path of the holder node of generation gen.
func HolderPath(p string, gen int64) string { return WorkerLockPath(p) + "/" + HolderName(gen) }

var clusterIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// CheckClusterID validates a worker ensemble's id: 1 to 64 letters,
// digits, '_', '.' or '-', starting with a letter or digit (it appears in
// znode names and, unescaped, in sequencers).
func CheckClusterID(cid string) error {
	if !clusterIDPattern.MatchString(cid) {
		return fmt.Errorf("hc: bad cluster id %q (letters, digits, _ . -)", cid)
	}
	return nil
}

// ClusterState is the state of a worker ensemble in the registry.
type ClusterState string

// Cluster states. A standby ensemble holds no locks until the daemon
// recruits it; recruitment makes it active, for good.
const (
	Active  ClusterState = "active"
	Standby ClusterState = "standby"
)

// Cluster is the record of /hc/clusters/<cid>.
type Cluster struct {
	// Connect is the ensemble's connect string (host:port,...).
	Connect string `json:"connect"`
	// State is active or standby.
	State ClusterState `json:"state"`
}

// NodeKind tells a domain from a lock in the master's name tree.
type NodeKind string

// Node kinds.
const (
	KindDomain NodeKind = "domain"
	KindLock   NodeKind = "lock"
)

// Node is the record of /hc/ns<path>.
//
// For a domain, Cluster is where its new locks are placed (empty for the
// root domain before any worker is registered). For a lock, Cluster is
// the worker that holds its current copy and Placement the number of that
// copy: 1 at creation, one more at every move. The worker's copy carries
// the same number, which is what lets a move tell its own copies from
// those of earlier or later moves.
type Node struct {
	Kind      NodeKind `json:"kind"`
	Cluster   string   `json:"cluster"`
	Placement int64    `json:"placement,omitempty"`
	// Creating marks a lock whose worker copy may not exist yet: the
	// creator, any client that locates it, or the daemon finishes the
	// creation. No move starts while it is set.
	Creating bool `json:"creating,omitempty"`
}

// Phase is the step a move has completed; docs/hierarchical-locks.md
// gives the protocol.
type Phase string

// Move phases, in order. A move record is deleted once the source copy is
// gone, which ends the move.
const (
	// Planned: the intent is recorded; nothing has changed on a worker.
	Planned Phase = "planned"
	// Prepared: the destination has a copy in state gone, whose version
	// is recorded (DestVersion) to fence the claim.
	Prepared Phase = "prepared"
	// Disabled: the source copy is moving; no acquire can succeed there.
	Disabled Phase = "disabled"
	// Recalcitrant: as Disabled, and a holder was seen; the move waits
	// for the hold to end (release or session expiry).
	Recalcitrant Phase = "recalcitrant"
	// Claimed: the destination copy is enabled with the source's final
	// generation (Gen).
	Claimed Phase = "claimed"
	// Committed: the master points to the destination and the lock
	// counts have moved with it.
	Committed Phase = "committed"
)

// Phases lists the phases in protocol order.
var Phases = []Phase{Planned, Prepared, Disabled, Recalcitrant, Claimed, Committed}

// ParsePhase returns the phase named s.
func ParsePhase(s string) (Phase, error) {
	for _, p := range Phases {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("hc: unknown move phase %q", s)
}

// Move is the record of /hc/moves/<enc>: a move of Lock from the copy
// with number Placement on From to the copy with number Placement+1 on
// To.
type Move struct {
	Lock      string `json:"lock"`
	From      string `json:"from"`
	To        string `json:"to"`
	Placement int64  `json:"placement"`
	Phase     Phase  `json:"phase"`
	// DestVersion is the version of the destination copy (state gone)
	// recorded at Prepared: the claim is a setData conditioned on it.
	DestVersion int32 `json:"dest_version"`
	// Gen is the generation carried to the destination (from Claimed on).
	Gen int64 `json:"gen,omitempty"`
}

// LockState is the state of a worker's copy of a lock.
type LockState string

// Worker copy states.
const (
	// Enabled: the lock lives here; acquires succeed when it is free.
	Enabled LockState = "enabled"
	// Moving: a move has disabled the copy; a hold in force continues
	// until it ends, no new one begins.
	Moving LockState = "moving"
	// Gone: the lock does not live here (moved away, or a destination not
	// yet claimed). The copy stays as a tombstone so that its version
	// only ever grows: every move step is a write conditioned on a
	// version, and a version seen once never comes back.
	Gone LockState = "gone"
)

// WorkerLock is the record of a worker's /hc/locks/<enc>.
type WorkerLock struct {
	State LockState `json:"state"`
	// Placement is the number of this copy (Node.Placement).
	Placement int64 `json:"placement"`
	// Gen is the generation of the latest acquire; the next acquire
	// takes Gen+1. A move carries it to the destination.
	Gen int64 `json:"gen"`
	// Holder names the session of the latest acquire ("<cid>:0x<id>")
	// until that hold is released; still set while the lock is free, it
	// means the hold ended with its session, and the next acquirer waits
	// out DelayMs (Chubby's lock-delay). A move carries both.
	Holder  string `json:"holder,omitempty"`
	DelayMs int64  `json:"delay_ms,omitempty"`
}

// Marshal encodes a record as JSON.
func Marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the records are plain structs: never fails
	}
	return b
}

// Unmarshal decodes a record read from a znode.
func Unmarshal(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	return nil
}

// SessionName names a session of worker cid in WorkerLock.Holder. Session
// ids are unique within one ensemble only, hence the cluster id.
func SessionName(cid string, session int64) string {
	return fmt.Sprintf("%s:0x%016x", cid, uint64(session))
}
