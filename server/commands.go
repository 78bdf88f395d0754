package server

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/replica"
)

// ZooKeeper's AdminServer commands (ZooKeeper 3.5+, Commands.java), served
// under /commands/NAME as JSON with ZooKeeper's field names: every answer
// carries "command" (the command's primary name) and "error" (null, or why
// it did not run). GET /commands lists the commands. The metrics port
// serves the commands that only read, unauthenticated, as ZooKeeper's
// AdminServer does; the ones that change the server (the stat resets) or
// reveal what only an administrator may see (snapshot: every znode's data
// and ACL, every session's password; ZooKeeper asks for ALL on the root)
// are served only on the authenticated admin port. While the server does
// not serve, every command but environment and get_trace_mask answers
// ZooKeeper's "not currently serving" error (monitor too: ZooKeeper's
// reports a role, and a member without a quorum must not report one).

// commandsPath is where the commands live (ZooKeeper's admin.commandURL).
const commandsPath = "/commands"

// field is one member of a command's JSON object.
type field struct {
	key   string
	value any
}

// fields is a JSON object that keeps its members in order, as ZooKeeper's
// LinkedHashMap does.
type fields []field

// MarshalJSON writes the members in order.
func (fs fields) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// command is one AdminServer command.
type command struct {
	names []string // the primary name first, then its aliases
	// adminOnly: it changes the server or reveals its data, so only the
	// authenticated admin port serves it.
	adminOnly bool
	// always: it answers also while the server does not serve
	// (ZooKeeper's serverRequired=false).
	always bool
	run    func(s *Server) fields
	// serve, for a command that writes its own answer (a stream rather
	// than one JSON object), stands for run once the checks every command
	// passes are passed.
	serve func(s *Server, w http.ResponseWriter, r *http.Request)
}

// commands are the AdminServer commands Giraffe serves, by every name.
var commands = map[string]*command{}

func init() {
	for _, c := range []*command{
		{names: []string{"connection_stat_reset", "crst"}, adminOnly: true, run: (*Server).cmdStatReset},
		{names: []string{"configuration", "conf", "config"}, run: (*Server).cmdConf},
		{names: []string{"connections", "cons"}, run: (*Server).cmdCons},
		{names: []string{"dirs"}, run: (*Server).cmdDirs},
		{names: []string{"dump"}, run: (*Server).cmdDump},
		{names: []string{"environment", "env", "envi"}, always: true, run: (*Server).cmdEnv},
		{names: []string{"get_trace_mask", "gtmk"}, always: true, run: func(*Server) fields { return fields{{"tracemask", 0}} }},
		{names: []string{"hash"}, run: (*Server).cmdHash},
		{names: []string{"is_read_only", "isro"}, run: func(*Server) fields { return fields{{"read_only", false}} }},
		{names: []string{"leader", "lead"}, run: (*Server).cmdLeader},
		{names: []string{"monitor", "mntr"}, run: (*Server).cmdMonitor},
		{names: []string{"observers", "obsr"}, run: func(*Server) fields {
			return fields{{"synced_observers", 0}, {"observers", []any{}}}
		}},
		{names: []string{"restore", "rest"}, adminOnly: true, serve: (*Server).serveRestore},
		{names: []string{"ruok"}, run: func(*Server) fields { return nil }},
		{names: []string{"server_stats", "srvr"}, run: (*Server).cmdSrvr},
		{names: []string{"snapshot", "snap"}, adminOnly: true, serve: (*Server).serveSnapshot},
		{names: []string{"stats", "stat"}, run: (*Server).cmdStat},
		{names: []string{"stat_reset", "srst"}, adminOnly: true, run: (*Server).cmdStatReset},
		{names: []string{"voting_view"}, run: (*Server).cmdVotingView},
		{names: []string{"watches", "wchc"}, run: (*Server).cmdWatches},
		{names: []string{"watches_by_path", "wchp"}, run: (*Server).cmdWatchesByPath},
		{names: []string{"watch_summary", "wchs"}, run: (*Server).cmdWatchSummary},
	} {
		for _, n := range c.names {
			commands[n] = c
		}
	}
}

// handleCommands routes /commands on mux, unless the AdminServer is off.
func (s *Server) handleCommands(mux *http.ServeMux, admin bool) {
	if s.cfg.NoAdminServer {
		return
	}
	mux.HandleFunc(commandsPath, s.commandsHandler(admin))
	mux.HandleFunc(commandsPath+"/", s.commandsHandler(admin))
}

// commandsHandler serves /commands and /commands/NAME; on the metrics port
// (admin false) it refuses the admin-only commands.
func (s *Server) commandsHandler(admin bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := strings.Trim(strings.TrimPrefix(r.URL.Path, commandsPath), "/")
		if name == "" {
			s.commandLinks(w, admin)
			return
		}
		code, out, serve := s.runCommand(name, admin)
		if serve != nil {
			serve(s, w, r)
			return
		}
		writeCommand(w, code, out)
	}
}

// writeCommand answers a command's JSON object with status code.
func writeCommand(w http.ResponseWriter, code int, out fields) {
	body, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(body, '\n'))
}

// commandAnswer is a command's JSON object: out, then ZooKeeper's
// "command" and "error" last. A command that fails says why in its own
// "error" member, which takes err's place.
func commandAnswer(primary string, out fields, err any) fields {
	for i, f := range out {
		if f.key == "error" {
			err = f.value
			out = append(out[:i:i], out[i+1:]...)
			break
		}
	}
	return append(out, field{"command", primary}, field{"error", err})
}

// runCommand runs the command called name and returns the HTTP status and
// the JSON object to answer; for a command that writes its own answer, it
// returns the function that does instead, once the checks pass.
func (s *Server) runCommand(name string, admin bool) (int, fields, func(*Server, http.ResponseWriter, *http.Request)) {
	c, ok := commands[name]
	switch {
	case !ok:
		// ZooKeeper answers an unknown command with 200 and an error.
		return http.StatusOK, commandAnswer(name, nil, "Unknown command: "+name), nil
	case c.adminOnly && !admin:
		return http.StatusForbidden, commandAnswer(name, nil,
			"this command changes the server or reveals its data: it is served on the authenticated admin port only"), nil
	case !c.always && !s.serving():
		return http.StatusOK, commandAnswer(name, nil, notServingText), nil
	case c.serve != nil:
		return 0, nil, c.serve
	}
	return http.StatusOK, commandAnswer(c.names[0], c.run(s), nil), nil
}

// commandLinks lists the primary names of the commands this port serves,
// as ZooKeeper's AdminServer does at /commands.
func (s *Server) commandLinks(w http.ResponseWriter, admin bool) {
	var names []string
	for n, c := range commands {
		if n == c.names[0] && (admin || !c.adminOnly) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	for _, n := range names {
		fmt.Fprintf(w, "<a href=\"%s/%s\">%s</a>\n<br/>\n", commandsPath, html.EscapeString(n), html.EscapeString(n))
	}
}

func (s *Server) cmdStatReset() fields {
	s.resetStats()
	return nil
}

func (s *Server) cmdConf() fields {
	lo, hi := s.cfg.sessionBounds()
	return fields{{"client_port", s.cfg.ClientPort}, {"data_dir", s.cfg.SnapDir()}, {"data_log_dir", s.cfg.LogDir()},
		{"tick_time", s.cfg.TickTime.Milliseconds()}, {"max_client_cnxns", s.cfg.MaxClientCnxns},
		{"min_session_timeout", lo.Milliseconds()}, {"max_session_timeout", hi.Milliseconds()},
		{"server_id", s.cfg.ServerID}}
}

// connInfo describes one connection as ZooKeeper's
// ServerCnxn.getConnectionInfo does; brief leaves out the session.
func connInfo(c *conn, brief bool) fields {
	f := fields{{"remote_socket_address", c.nc.RemoteAddr().String()}, {"interest_ops", 1},
		{"outstanding_requests", len(c.slots)}, {"packets_received", c.received.Load()},
		{"packets_sent", c.sent.Load()}}
	if !brief {
		f = append(f, field{"session_id", c.sessionID()}, field{"established", c.since.UnixMilli()},
			field{"session_timeout", c.timeout.Milliseconds()})
	}
	return f
}

// connections describes the plain and the secure port's connections.
func (s *Server) connections(brief bool) (plain, secure []fields) {
	plain, secure = []fields{}, []fields{}
	for _, c := range s.sortedConns() {
		if _, ok := c.nc.(*tls.Conn); ok {
			secure = append(secure, connInfo(c, brief))
		} else {
			plain = append(plain, connInfo(c, brief))
		}
	}
	return plain, secure
}

func (s *Server) cmdCons() fields {
	plain, secure := s.connections(false)
	return fields{{"connections", plain}, {"secure_connections", secure}}
}

func (s *Server) cmdDirs() fields {
	return fields{{"datadir_size", dirSize(s.cfg.SnapDir())}, {"logdir_size", dirSize(s.cfg.LogDir())}}
}

// cmdDump reports the sessions by the time they expire (rounded to the
// millisecond, where ZooKeeper rounds to its expiry buckets) and their
// ephemeral nodes.
func (s *Server) cmdDump() fields {
	byExpiry := map[int64][]int64{}
	for id, at := range s.sessions.Deadlines() {
		ms := at.UnixMilli()
		byExpiry[ms] = append(byExpiry[ms], id)
	}
	for _, ids := range byExpiry {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	}
	eph := map[int64][]string{}
	s.treeMu.RLock()
	for _, si := range s.tree.Sessions() {
		if ps := s.tree.Ephemerals(si.ID, "/"); len(ps) > 0 {
			eph[si.ID] = ps
		}
	}
	s.treeMu.RUnlock()
	return fields{{"expiry_time_to_session_ids", byExpiry}, {"session_id_to_ephemeral_paths", eph}}
}

func (s *Server) cmdEnv() fields {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	return fields{{"zookeeper.version", Version}, {"host.name", host}, {"go.version", runtime.Version()},
		{"os.name", runtime.GOOS}, {"os.arch", runtime.GOARCH}, {"user.dir", wd}, {"GOMAXPROCS", runtime.GOMAXPROCS(0)}}
}

func (s *Server) cmdHash() fields {
	s.treeMu.RLock()
	d := fields{{"zxid", s.pipe.lastZxid()}, {"digest", s.tree.Digest()}}
	s.treeMu.RUnlock()
	return fields{{"digests", []fields{d}}}
}

// cmdLeader answers is_leader, leader_id and leader_ip (the host of the
// leader's peer address); a standalone server has no leader, and answers
// ZooKeeper's error for a server outside an ensemble.
func (s *Server) cmdLeader() fields {
	rp, ok := s.pipe.(*replicated)
	if !ok {
		return fields{{"error", "server is not initialized"}}
	}
	st := rp.rep.Status()
	m, _, _ := s.membership.get()
	ip := ""
	if x, ok := m.Member(st.Leader); ok {
		ip, _, _ = net.SplitHostPort(x.Peer)
	}
	return fields{{"is_leader", st.Role == replica.RoleLeader}, {"leader_id", st.Leader}, {"leader_ip", ip}}
}

func (s *Server) cmdMonitor() fields {
	vs := s.monitorValues()
	out := make(fields, len(vs))
	for i, v := range vs {
		out[i] = field{v.key, v.value}
	}
	return out
}

// cmdSrvr answers ZooKeeper's server_stats: its ServerStats under
// server_stats, with Jackson's snake_case names.
func (s *Server) cmdSrvr() fields {
	conns, rcv, snt := s.stats()
	lo, avg, hi := s.latency.millis()
	mode, _ := s.modeAndRole()
	s.treeMu.RLock()
	zxid, nodes := s.pipe.lastZxid(), s.tree.NodeCount()
	s.treeMu.RUnlock()
	stats := fields{{"packets_sent", snt}, {"packets_received", rcv}, {"max_latency", hi}, {"min_latency", lo},
		{"avg_latency", avg}, {"outstanding_requests", s.pipe.queued()}, {"last_processed_zxid", zxid},
		{"data_dir_size", dirSize(s.cfg.SnapDir())}, {"log_dir_size", dirSize(s.cfg.LogDir())},
		{"server_state", mode}, {"num_alive_client_connections", conns},
		{"uptime", time.Since(s.started).Milliseconds()}}
	return fields{{"version", Version}, {"read_only", false}, {"server_stats", stats}, {"node_count", nodes}}
}

func (s *Server) cmdStat() fields {
	plain, secure := s.connections(true)
	return append(s.cmdSrvr(), field{"connections", plain}, field{"secure_connections", secure})
}

// cmdVotingView lists the committed membership as ZooKeeper's voting_view
// does; Giraffe has one peer address per member and no election port.
func (s *Server) cmdVotingView() fields {
	view := map[string]fields{}
	if _, ok := s.pipe.(*replicated); ok {
		m, _, _ := s.membership.get()
		for _, x := range m.Members {
			view[fmt.Sprint(x.ID)] = fields{{"server_addresses", []string{x.Peer}}, {"election_addresses", []string{}},
				{"client_address", x.Client}, {"learner_type", "participant"}}
		}
	}
	return fields{{"current_config", view}}
}

func (s *Server) cmdWatches() fields {
	by := map[int64][]string{}
	for _, x := range s.dataWatches() {
		by[x.session] = append(by[x.session], x.path)
	}
	return fields{{"session_id_to_watched_paths", by}}
}

func (s *Server) cmdWatchesByPath() fields {
	by := map[string][]int64{}
	for _, x := range s.dataWatches() {
		by[x.path] = append(by[x.path], x.session)
	}
	return fields{{"path_to_session_ids", by}}
}

func (s *Server) cmdWatchSummary() fields {
	s.watchMu.Lock()
	sum := s.watches.Summary()
	s.watchMu.Unlock()
	return fields{{"num_connections", sum.Connections}, {"num_paths", sum.Paths}, {"num_total_watches", sum.Watches}}
}
