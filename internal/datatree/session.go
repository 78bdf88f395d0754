package datatree

import (
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// createSession adds e.Session with its timeout and password. An id that is
// already in the table, or one that could not own ephemeral nodes (see
// validSessionID), is refused with BADARGUMENTS so that the server can pick
// another id rather than have two clients share a session.
func (t *Tree) createSession(e *txn.Entry) txn.Result {
	if !validSessionID(e.Session) || t.hasSession(e.Session) {
		return fail(zkproto.ErrBadArguments)
	}
	passwd := slices.Clone(e.Passwd)
	s := &session{timeout: e.Timeout, passwd: passwd, digest: sessionDigest(e.Session, e.Timeout, passwd)}
	t.sessions[e.Session] = s
	t.digest += s.digest
	return txn.Result{}
}

// closeSession removes e.Session (closed by its client or expired) and
// deletes its ephemeral nodes in path order, with their triggers, as
// DataTree.killSession does.
func (t *Tree) closeSession(e *txn.Entry) (txn.Result, []Trigger) {
	s := t.sessions[e.Session]
	if s == nil {
		return fail(zkproto.ErrSessionExpired), nil
	}
	var trig []Trigger
	for _, p := range t.ephemeralPaths(e.Session) {
		parentPath, name, _ := splitPath(p)
		n, parent := t.nodes[p], t.nodes[parentPath]
		// Ephemeral nodes have no children and their parents cannot be
		// deleted first, so both always exist.
		trig = t.deleteNode(p, parentPath, parent, name, n, e.Zxid, trig)
	}
	delete(t.sessions, e.Session)
	t.digest -= s.digest
	return txn.Result{}, trig
}

// ephemeralPaths returns the session's ephemeral paths, sorted.
func (t *Tree) ephemeralPaths(id int64) []string {
	set := t.ephemerals[id]
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Ephemerals returns the paths of the session's ephemeral nodes that start
// with prefix, sorted, as getEphemerals: an empty, blank or "/" prefix
// selects all of them, and the match is a plain string prefix ("/a" matches
// "/ab").
func (t *Tree) Ephemerals(session int64, prefix string) []string {
	all := t.ephemeralPaths(session)
	if p := trimJava(prefix); p == "" || p == rootPath {
		return all
	}
	out := all[:0]
	for _, p := range all {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// Session returns the session table entry of id.
func (t *Tree) Session(id int64) (SessionInfo, bool) {
	s := t.sessions[id]
	if s == nil {
		return SessionInfo{}, false
	}
	return SessionInfo{ID: id, Timeout: s.timeout, Passwd: slices.Clone(s.passwd)}, true
}

// Sessions returns every session in the table, sorted by id.
func (t *Tree) Sessions() []SessionInfo {
	out := make([]SessionInfo, 0, len(t.sessions))
	for id, s := range t.sessions {
		out = append(out, SessionInfo{ID: id, Timeout: s.timeout, Passwd: slices.Clone(s.passwd)})
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}
