package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/console"
	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// This file serves the web console (package console, docs/console.md) on
// the admin listener under /ui/. Its pages and its reads need no token:
// they show what the metrics port and an unauthenticated ZooKeeper client
// already see (the membership, the roles, the load, and the znodes whose
// ACL lets anyone read them). Its writes (create, set, delete) need the
// admin token, as every other request of the admin listener, and are a
// client's writes (console_write.go).

// consoleHandler routes the console's requests; writes check the token.
func (s *Server) consoleHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, console.Assets())
	get := func(f func(*http.Request) any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "GET only", http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Cache-Control", "no-store")
			writeJSON(w, http.StatusOK, f(r))
		}
	}
	mux.HandleFunc(console.PathSelf, get(func(*http.Request) any { return s.consoleSelf() }))
	mux.HandleFunc(console.PathSeries, get(func(*http.Request) any { return s.metrics.series.Samples() }))
	mux.HandleFunc(console.PathEnsemble, get(func(r *http.Request) any { return s.consoleEnsemble(r.Context()) }))
	mux.HandleFunc(console.PathLoads, get(func(r *http.Request) any {
		v, _ := s.consolePeers()
		return console.Collect(r.Context(), v, consoleHTTP, console.PathSeries, s.metrics.series.Samples())
	}))
	mux.HandleFunc(console.PathEvents, get(func(*http.Request) any { return s.journal.Events() }))
	mux.HandleFunc(console.PathTimeline, get(func(r *http.Request) any {
		v, _ := s.consolePeers()
		return console.Collect(r.Context(), v, consoleHTTP, console.PathEvents, s.journal.Events())
	}))
	mux.HandleFunc(console.PathWhoami, get(func(r *http.Request) any {
		return console.Who{Admin: adminapi.CheckToken(r, s.cfg.adminToken) == nil, Server: s.cfg.ServerID}
	}))
	mux.HandleFunc(console.PathZnode, s.znodeHandler)
	mux.HandleFunc(console.PathWatch, s.liveWatchHandler)
	mux.HandleFunc(console.PathNSStatus, get(func(*http.Request) any { return s.namespacesStatus() }))
	mux.HandleFunc(console.PathNamespaces, get(func(r *http.Request) any {
		v, _ := s.consolePeers()
		return console.Collect(r.Context(), v, consoleHTTP, console.PathNSStatus, s.namespacesStatus())
	}))
	return mux
}

// consoleSelf is this server's report of itself.
func (s *Server) consoleSelf() console.Self {
	me := console.Self{ID: s.cfg.ServerID, Role: console.RoleStandalone, Serving: s.serving(),
		Sessions: s.sessions.Count(), Load: s.metrics.series.Latest(), Down: []quorum.ID{}}
	if s.ln != nil {
		me.Client = s.ln.Addr().String()
	}
	if s.adminLn != nil {
		me.Admin = s.adminLn.Addr().String()
	}
	s.connsMu.Lock()
	me.Connections = len(s.conns)
	s.connsMu.Unlock()
	s.treeMu.RLock()
	me.Znodes = s.tree.NodeCount()
	s.treeMu.RUnlock()
	last := uint64(s.pipe.lastZxid())
	me.LastZxid, me.Commit, me.Applied = console.Zxid(last), console.Zxid(last), console.Zxid(last)
	if rp, ok := s.pipe.(*replicated); ok {
		st := rp.rep.Status()
		setConsoleRole(&me, st)
		me.LastZxid, me.Commit, me.Applied = console.Zxid(uint64(st.Last)), console.Zxid(uint64(st.Commit)), console.Zxid(uint64(st.Applied))
		me.Pending = max(int64(st.Last)-int64(st.Applied), 0)
		if st.Last>>32 != st.Applied>>32 {
			me.Pending = -1
		}
		if st.Down != nil {
			me.Down = st.Down
		}
	}
	return me
}

// setConsoleRole fills in the server's place in the ensemble from its
// replica's status.
func setConsoleRole(me *console.Self, st replica.Status) {
	me.Role, me.Group, me.Leader, me.Coordinator = string(st.Role), st.Group, st.Leader, st.HardState.Coordinator
	me.Epoch, me.Recovering = uint64(st.Epoch), st.Recovering
}

// noteRole puts a change of the server's leader, epoch or role on the
// console's timeline as it happens (from the replica's status changes).
func (s *Server) noteRole(cur replica.Status) {
	self := console.Self{ID: s.cfg.ServerID}
	setConsoleRole(&self, cur)
	s.journal.Observe(time.Now(), self)
}

// consolePeers returns the members and the committed groups; a standalone
// server is alone in its one group.
func (s *Server) consolePeers() (console.View, bool) {
	v := console.View{Self: s.consoleSelf(), Cluster: s.clusterName}
	if !s.cfg.Replicated() {
		v.Peers = []console.Peer{{ID: s.cfg.ServerID, Admin: v.Self.Admin}}
		v.Groups = [][]quorum.ID{{s.cfg.ServerID}}
		return v, false
	}
	m, voters, _ := s.membership.get()
	for _, x := range m.Members {
		v.Peers = append(v.Peers, console.Peer{ID: x.ID, Admin: x.Admin})
	}
	e := &s.cfg.Ensemble
	v.Groups, v.Topology = voters.Groups, e.Shape.Topology()
	v.Trees, v.Children, v.Classic = e.Shape.Trees, e.Shape.Children, e.Shape.Classic
	return v, true
}

// consoleHTTP asks the other members' consoles; their answers are small
// and their admin ports local to the ensemble.
var consoleHTTP = &http.Client{Timeout: 2 * console.FetchTimeout}

func (s *Server) consoleEnsemble(ctx context.Context) console.Ensemble {
	v, _ := s.consolePeers()
	return console.Gather(ctx, v, console.HTTPFetcher(consoleHTTP))
}

// znodeHandler serves /ui/api/znode: GET reads, POST creates, PUT sets and
// DELETE deletes (the last three with the admin token).
func (s *Server) znodeHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		path := r.URL.Query().Get("path")
		if path == "" {
			path = "/"
		}
		z, code := s.readZnode(path)
		if code != zkproto.OK {
			http.Error(w, code.String(), statusOf(code))
			return
		}
		writeJSON(w, http.StatusOK, z)
		return
	case http.MethodPost, http.MethodPut, http.MethodDelete:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST, PUT, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := adminapi.CheckToken(r, s.cfg.adminToken); err != nil {
		s.log.Warn("console: write refused", "reason", err.Error(), "method", r.Method, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="giraffe-admin"`)
		http.Error(w, "admin token required: "+err.Error(), http.StatusUnauthorized)
		return
	}
	var ch console.Change
	if r.Method == http.MethodDelete {
		q := r.URL.Query()
		v, err := strconv.ParseInt(q.Get("version"), 10, 32)
		if err != nil {
			http.Error(w, "version required (-1: any)", http.StatusBadRequest)
			return
		}
		ch = console.Change{Path: q.Get("path"), Version: int32(v)}
	} else if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxDataBytes)+4096)).Decode(&ch); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	err := s.consoleWrite(ctx, r.Method, ch)
	var code zkproto.Code
	switch {
	case err == nil:
		s.log.Info("console: znode changed", "method", r.Method, "path", ch.Path, "remote", r.RemoteAddr)
	case errors.As(err, &code):
		http.Error(w, code.String(), statusOf(code))
		return
	default:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	z, rc := s.readZnode(ch.Path)
	if r.Method == http.MethodDelete || rc != zkproto.OK {
		writeJSON(w, http.StatusOK, console.Znode{Path: ch.Path})
		return
	}
	writeJSON(w, http.StatusOK, z)
}

// readZnode reads path from this server's tree as an unauthenticated
// client would: parts the ACL refuses are named, not shown.
func (s *Server) readZnode(path string) (console.Znode, zkproto.Code) {
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	z := console.Znode{Path: path, ACL: []console.ACL{}, Children: []string{}}
	st, code := s.tree.Exists(path, nil)
	switch code {
	case zkproto.OK:
		z.Stat = statOf(st)
	case zkproto.ErrNoAuth:
		// Even its Stat needs READ.
		z.DataError, z.ACLError, z.ChildrenError = code.String(), code.String(), code.String()
		return z, zkproto.OK
	default:
		return console.Znode{}, code
	}
	if data, st, code := s.tree.GetData(path, nil); code == zkproto.OK {
		if path == datatree.ConfigPath {
			data, st = s.configView(data, st)
			z.Stat = statOf(st)
		}
		z.Data = data
	} else {
		z.DataError = code.String()
	}
	if acl, _, code := s.tree.GetACL(path, nil); code == zkproto.OK {
		for _, a := range acl {
			z.ACL = append(z.ACL, console.ACL{Perms: a.Perms, Scheme: a.ID.Scheme, ID: a.ID.ID})
		}
	} else {
		z.ACLError = code.String()
	}
	if kids, _, code := s.tree.Children(path, nil); code == zkproto.OK {
		z.Children = append(z.Children, kids...) // sorted, and [] rather than null when none
		z.Recipe = s.recipeOf(path, kids)
	} else {
		z.ChildrenError = code.String()
	}
	return z, zkproto.OK
}

// maxRecipeChildren bounds the children looked at to recognize a recipe:
// a directory bigger than that is shown as a plain list.
const maxRecipeChildren = 1000

// recipeOf recognizes a recipe in path's children (the tree read-locked),
// with each child's owning session.
func (s *Server) recipeOf(path string, kids []string) *console.Recipe {
	if len(kids) == 0 || len(kids) > maxRecipeChildren {
		return nil
	}
	children := make([]console.Child, 0, len(kids))
	for _, k := range kids {
		st, code := s.tree.Exists(datatree.JoinPath(path, k), nil)
		if code != zkproto.OK {
			return nil
		}
		children = append(children, console.Child{Name: k, Owner: console.Zxid(uint64(st.EphemeralOwner))})
	}
	return console.Recognize(children)
}

func statOf(st zkproto.Stat) *console.Stat {
	return &console.Stat{Czxid: console.Zxid(uint64(st.Czxid)), Mzxid: console.Zxid(uint64(st.Mzxid)),
		Pzxid: console.Zxid(uint64(st.Pzxid)), Ctime: st.Ctime, Mtime: st.Mtime, Version: st.Version,
		Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: console.Zxid(uint64(st.EphemeralOwner)),
		DataLength: st.DataLength, NumChildren: st.NumChildren}
}

// statusOf is the HTTP status of a ZooKeeper error.
func statusOf(code zkproto.Code) int {
	switch code {
	case zkproto.ErrNoNode:
		return http.StatusNotFound
	case zkproto.ErrNoAuth:
		return http.StatusForbidden
	case zkproto.ErrBadVersion, zkproto.ErrNodeExists, zkproto.ErrNotEmpty, zkproto.ErrNoChildrenForEphemerals:
		return http.StatusConflict
	case zkproto.ErrBadArguments, zkproto.ErrInvalidACL:
		return http.StatusBadRequest
	}
	return http.StatusServiceUnavailable
}

// seriesLoop closes a second of the console's load samples every second,
// and notes the server's first state and its membership for the
// timeline (noteStatus notes its elections as they happen).
func (s *Server) seriesLoop() {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			s.metrics.series.Roll(now)
			var ids []quorum.ID
			if s.cfg.Replicated() {
				m, _, _ := s.membership.get()
				for _, x := range m.Members {
					ids = append(ids, x.ID)
				}
			}
			s.journal.Start(now, s.consoleSelf())
			s.journal.ObserveMembers(now, s.cfg.ServerID, ids)
		}
	}
}
