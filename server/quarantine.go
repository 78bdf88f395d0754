package server

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/giraffe-coord/giraffe/internal/jsonfile"
	"github.com/giraffe-coord/giraffe/internal/nsmap"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// This file keeps a standalone server's quarantined namespaces: declared
// namespaces whose data on this server was found damaged (a log record
// that fails its checksum, whose checksummed header names the namespaces
// it changed) and that no local copy can rebuild. A quarantined namespace
// is frozen as it was before the damage: the applier skips every entry
// that changes it (the tree's gate), clients get DATAINCONSISTENCY for
// every request that names a path in it, and every other namespace serves
// as usual (docs/namespaces.md, "Reliability isolation").
//
// The set is durable (quarantineFile in the data directory, written before
// the server serves), because the damaged record that caused it may later
// leave the log (a purge, or a damaged last record the log cuts off), and
// a namespace that missed a write must never be served as if it had not.

// quarantineFile is the name of the record of quarantined namespaces in
// the data directory.
const quarantineFile = "quarantine"

// quarantined is one quarantined namespace, as quarantineFile records it.
type quarantined struct {
	// Name is the namespace's name (its root without the slash).
	Name string `json:"name"`
	// Since is the zxid of the first entry the namespace missed.
	Since int64 `json:"since"`
	// Reason says what was damaged.
	Reason string `json:"reason"`
}

// quarantine is the set of quarantined namespaces. Reads (every request
// on a server with a quarantine) take no lock; the set grows only while
// the log is replayed, when a skipped multi takes the other namespaces it
// changed with it.
type quarantine struct {
	tab nsmap.Table
	mu  sync.Mutex // serializes growth
	set atomic.Pointer[map[string]quarantined]
	// entangled is set when a skipped entry also changed the default
	// namespace, which cannot be quarantined: the server must not start.
	entangled atomic.Pointer[string]
}

// newQuarantine returns an empty quarantine over tab.
func newQuarantine(tab nsmap.Table) *quarantine {
	q := &quarantine{tab: tab}
	q.set.Store(&map[string]quarantined{})
	return q
}

// loadQuarantine reads dir's quarantine file, if any.
func loadQuarantine(dir string, tab nsmap.Table) (*quarantine, error) {
	q := newQuarantine(tab)
	var recs []quarantined
	err := jsonfile.Read(filepath.Join(dir, quarantineFile), &recs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return q, nil
		}
		return nil, err
	}
	for _, r := range recs {
		q.add(r)
	}
	return q, nil
}

// save writes the set to dir's quarantine file, durably.
func (q *quarantine) save(dir string) error {
	return jsonfile.WriteSynced(filepath.Join(dir, quarantineFile), q.list())
}

// add quarantines r.Name, keeping the earliest Since when it already is.
func (q *quarantine) add(r quarantined) {
	q.mu.Lock()
	defer q.mu.Unlock()
	old := *q.set.Load()
	if have, ok := old[r.Name]; ok && have.Since <= r.Since {
		return
	}
	set := maps.Clone(old)
	set[r.Name] = r
	q.set.Store(&set)
}

// empty reports whether no namespace is quarantined.
func (q *quarantine) empty() bool { return q == nil || len(*q.set.Load()) == 0 }

// list returns the quarantined namespaces, sorted by name.
func (q *quarantine) list() []quarantined {
	set := *q.set.Load()
	out := make([]quarantined, 0, len(set))
	for _, name := range slices.Sorted(maps.Keys(set)) {
		out = append(out, set[name])
	}
	return out
}

// lookup returns the quarantine of namespace name.
func (q *quarantine) lookup(name string) (quarantined, bool) {
	if q == nil {
		return quarantined{}, false
	}
	r, ok := (*q.set.Load())[name]
	return r, ok
}

// holds reports whether path lies in a quarantined namespace.
func (q *quarantine) holds(path string) bool { return q.holdsAt(path, 1<<63-1) }

// holdsAt reports whether path lies in a namespace quarantined since zxid
// or earlier: the entries before a namespace's first missed one still
// apply to it.
func (q *quarantine) holdsAt(path string, zxid int64) bool {
	if q.empty() {
		return false
	}
	r, ok := (*q.set.Load())[q.tab.Classify(path).Name]
	return ok && r.Since <= zxid
}

// admit is the tree's gate: it holds back every entry that changes a
// quarantined namespace. A multi held back takes every other namespace it
// changes into the quarantine, since whether it would have succeeded
// depends on the frozen one. Session entries pass: closing a session
// removes its ephemerals wherever they are, which depends on no
// namespace's state.
func (q *quarantine) admit(e *txn.Entry) bool {
	switch e.Op.Kind {
	case txn.KindCreate, txn.KindDelete, txn.KindSetData, txn.KindSetACL, txn.KindCheck, txn.KindDeleteContainer:
		return !q.holdsAt(e.Op.Path, e.Zxid)
	case txn.KindMulti:
		frozen := false
		for i := range e.Op.Ops {
			frozen = frozen || q.holdsAt(e.Op.Ops[i].Path, e.Zxid)
		}
		if !frozen {
			return true
		}
		for i := range e.Op.Ops {
			ns := opNamespace(q.tab, &e.Op.Ops[i])
			if ns.Name == "" {
				why := fmt.Sprintf("entry %#x, a multi that changes a quarantined namespace, also changes the default namespace", e.Zxid)
				q.entangled.CompareAndSwap(nil, &why)
				continue
			}
			q.add(quarantined{Name: ns.Name, Since: e.Zxid,
				Reason: fmt.Sprintf("entry %#x, a multi held back with a quarantined namespace, also changes it", e.Zxid)})
		}
		return false
	}
	return true
}

// refuse returns the reply to a request that names a path in a
// quarantined namespace, or ok false for one that names none. A multi is
// refused whole, in ZooKeeper's multi error shape. The watches a
// reconnecting client sets again pass: an error would fail its whole
// reconnection, and a watch on a frozen namespace waits for a change that
// does not come.
func (q *quarantine) refuse(op zkproto.OpCode, req zkproto.Record) (code zkproto.Code, body zkproto.Record, refused bool) {
	if q.empty() {
		return zkproto.OK, nil, false
	}
	switch req.(type) {
	case *zkproto.SetWatches, *zkproto.SetWatches2:
		return zkproto.OK, nil, false
	}
	if m, ok := req.(*zkproto.MultiRequest); ok {
		for i := range m.Ops {
			for _, p := range requestPaths(m.Ops[i].Req) {
				if q.holds(p) {
					if op == zkproto.OpMultiRead {
						return zkproto.ErrDataInconsistency, nil, true
					}
					return zkproto.OK, multiRefusal(len(m.Ops), i, zkproto.ErrDataInconsistency), true
				}
			}
		}
		return zkproto.OK, nil, false
	}
	for _, p := range requestPaths(req) {
		if q.holds(p) {
			return zkproto.ErrDataInconsistency, nil, true
		}
	}
	return zkproto.OK, nil, false
}

// requestPaths returns the znode paths a request names.
func requestPaths(req zkproto.Record) []string {
	switch r := req.(type) {
	case *zkproto.CreateRequest:
		return []string{r.Path}
	case *zkproto.CreateTTLRequest:
		return []string{r.Path}
	case *zkproto.DeleteRequest:
		return []string{r.Path}
	case *zkproto.SetDataRequest:
		return []string{r.Path}
	case *zkproto.SetACLRequest:
		return []string{r.Path}
	case *zkproto.CheckVersionRequest:
		return []string{r.Path}
	case *zkproto.GetDataRequest:
		return []string{r.Path}
	case *zkproto.ExistsRequest:
		return []string{r.Path}
	case *zkproto.GetChildrenRequest:
		return []string{r.Path}
	case *zkproto.GetChildren2Request:
		return []string{r.Path}
	case *zkproto.GetACLRequest:
		return []string{r.Path}
	case *zkproto.GetAllChildrenNumberRequest:
		return []string{r.Path}
	case *zkproto.GetEphemeralsRequest:
		return []string{r.PrefixPath}
	case *zkproto.SyncRequest:
		return []string{r.Path}
	case *zkproto.AddWatchRequest:
		return []string{r.Path}
	case *zkproto.CheckWatchesRequest:
		return []string{r.Path}
	case *zkproto.RemoveWatchesRequest:
		return []string{r.Path}
	case *zkproto.SetWatches:
		return slices.Concat(r.DataWatches, r.ExistWatches, r.ChildWatches)
	case *zkproto.SetWatches2:
		return slices.Concat(r.DataWatches, r.ExistWatches, r.ChildWatches,
			r.PersistentWatches, r.PersistentRecursiveWatches)
	}
	return nil
}

// entryMask is the mask of namespaces (nsmap.Bit) an entry may change,
// which its log record carries so that the record can be attributed when
// its payload is damaged. Session entries and namespace declarations may
// change any namespace.
func entryMask(tab nsmap.Table, e *txn.Entry) uint64 {
	switch e.Op.Kind {
	case txn.KindCreate, txn.KindDelete, txn.KindSetData, txn.KindSetACL, txn.KindCheck, txn.KindDeleteContainer:
		return nsmap.Bit(opNamespace(tab, &e.Op))
	case txn.KindMulti:
		var m uint64
		for i := range e.Op.Ops {
			m |= nsmap.Bit(opNamespace(tab, &e.Op.Ops[i]))
		}
		return m
	case txn.KindNoop:
		return 0
	}
	return nsmap.AllBits
}

// attribute quarantines the namespaces a damaged log record changed,
// from its zxid on. A record that may have changed the default namespace
// (a session entry, a record whose header cannot be read) cannot be
// contained: attribute returns an error and the server must not start.
func (q *quarantine) attribute(zxid int64, mask uint64, what string) error {
	names, withDefault := q.tab.InMask(mask)
	if withDefault {
		return fmt.Errorf("%s may have changed the default namespace or sessions (namespace mask %#x), which no quarantine contains", what, mask)
	}
	for _, ns := range names {
		q.add(quarantined{Name: ns.Name, Since: zxid, Reason: what})
	}
	return nil
}

// err is why the quarantine cannot contain the damage, or nil.
func (q *quarantine) err() error {
	if q == nil {
		return nil
	}
	if why := q.entangled.Load(); why != nil {
		return errors.New(*why)
	}
	return nil
}
