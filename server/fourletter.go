package server

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/watch"
)

// fourLetter answers a four-letter word on the client port, as ZooKeeper's
// FourLetterCommands do, then the connection closes.
func (c *conn) fourLetter(word string) {
	s := c.s
	var out string
	if !s.cfg.fourLetterAllowed(word) {
		out = word + " is not executed because it is not in the whitelist.\n"
	} else {
		out = s.fourLetterText(word, c)
	}
	c.nc.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	c.nc.Write([]byte(out))
}

// fourLetterText builds the answer to one allowed word.
func (s *Server) fourLetterText(word string, c *conn) string {
	var b strings.Builder
	if ok, why := s.servingFor(0); !ok {
		if text, has := notServingAnswer(word); has {
			b.WriteString(text)
			if word == "srvr" || word == "stat" {
				// Giraffe's own lines follow ZooKeeper's, as when serving.
				fmt.Fprintf(&b, "Giraffe not serving: %s\n", why)
				s.writeGiraffeStatus(&b)
			}
			return b.String()
		}
	}
	switch word {
	case "ruok":
		return "imok"
	case "isro":
		return "rw"
	case "srvr":
		s.writeSrvr(&b, false)
	case "stat":
		s.writeSrvr(&b, true)
	case "mntr":
		s.writeMntr(&b)
	case "conf":
		s.writeConf(&b)
	case "cons":
		s.writeCons(&b)
		b.WriteString("\n")
	case "crst", "srst":
		s.resetStats()
		if word == "crst" {
			return "Connection stats reset.\n"
		}
		return "Server stats reset.\n"
	case "wchs":
		s.watchMu.Lock()
		sum := s.watches.Summary()
		s.watchMu.Unlock()
		fmt.Fprintf(&b, "%d connections watching %d paths\nTotal watches:%d\n", sum.Connections, sum.Paths, sum.Watches)
	case "wchc", "wchp":
		s.writeWatches(&b, word == "wchc")
	case "dump":
		s.writeDump(&b)
	case "envi":
		s.writeEnvi(&b)
	case "dirs":
		fmt.Fprintf(&b, "datadir_size: %d\nlogdir_size: %d\n", dirSize(s.cfg.SnapDir()), dirSize(s.cfg.LogDir()))
	case "hash":
		s.treeMu.RLock()
		fmt.Fprintf(&b, "digest:%d zxid:0x%x\n", s.tree.Digest(), s.pipe.lastZxid())
		s.treeMu.RUnlock()
	case "gtmk":
		// Giraffe has no request tracing; the mask is always 0.
		return "0\n"
	case "stmk":
		var mask [8]byte
		if _, err := c.br.Read(mask[:]); err == nil {
			return fmt.Sprintf("%d\n", binary.BigEndian.Uint64(mask[:]))
		}
		return "0\n"
	}
	return b.String()
}

func (s *Server) resetStats() {
	s.latency.reset()
	s.connsMu.Lock()
	for _, c := range s.conns {
		c.received.Store(0)
		c.sent.Store(0)
	}
	s.connsMu.Unlock()
}

// stats sums the connection counters.
func (s *Server) stats() (conns int, received, sent int64) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	for _, c := range s.conns {
		received += c.received.Load()
		sent += c.sent.Load()
	}
	return len(s.conns), received, sent
}

func (s *Server) writeSrvr(b *strings.Builder, withClients bool) {
	fmt.Fprintf(b, "Zookeeper version: %s, built for Giraffe\n", Version)
	if withClients {
		b.WriteString("Clients:\n")
		s.writeCons(b)
		b.WriteString("\n")
	}
	conns, rcv, snt := s.stats()
	s.treeMu.RLock()
	zxid, nodes := s.pipe.lastZxid(), s.tree.NodeCount()
	s.treeMu.RUnlock()
	fmt.Fprintf(b, "Latency min/avg/max: %s\nReceived: %d\nSent: %d\nConnections: %d\nOutstanding: %d\n",
		s.latency.String(), rcv, snt, conns, s.pipe.queued())
	mode, _ := s.modeAndRole()
	fmt.Fprintf(b, "Zxid: 0x%x\nMode: %s\nNode count: %d\n", zxid, mode, nodes)
	s.writeGiraffeStatus(b)
}

// writeGiraffeStatus writes the lines of srvr and stat that only Giraffe
// has: its role and, in an ensemble, its place in the protocol.
func (s *Server) writeGiraffeStatus(b *strings.Builder) {
	_, role := s.modeAndRole()
	fmt.Fprintf(b, "Giraffe role: %s\n", role)
	if rp, ok := s.pipe.(*replicated); ok {
		st := rp.rep.Status()
		fmt.Fprintf(b, "Giraffe server: %d\nGiraffe group: %d\nGiraffe leader: %d\nGiraffe epoch: %d\nGiraffe commit: 0x%x\n",
			st.ID, st.Group, st.Leader, st.Epoch, uint64(st.Commit))
		fmt.Fprintf(b, "Giraffe incarnation: %016x\nGiraffe registration: %s\n", st.Incarnation, registration(st))
	}
}

// registration says whether the ensemble counts this server's votes:
// "registered" (its configuration names this incarnation), "pending" (no
// incarnation is registered for it yet, so any counts) or "recovering"
// (it lost durable state, or another incarnation is registered: it does
// not vote until the leader registers this one).
func registration(st replica.Status) string {
	switch {
	case st.Recovering:
		return "recovering"
	case st.Registered:
		return "registered"
	}
	return "pending"
}

// notServingAnswer returns what ZooKeeper answers to word while its
// server is not running (its four-letter commands check
// isZKServerRunning), and false for the words that answer as usual then
// (ruok, envi, gtmk, stmk).
func notServingAnswer(word string) (string, bool) {
	switch word {
	case "ruok", "envi", "gtmk", "stmk":
		return "", false
	case "isro":
		return "null", true
	case "hash":
		return notServingText, true // DigestCommand prints it without a newline
	}
	return notServingText + "\n", true
}

// modeAndRole returns the Mode ZooKeeper tools expect (standalone, leader
// or follower) and Giraffe's own role (standalone, leader, coordinator or
// acceptor). Mode is only shown while the server serves, so a leader
// without a quorum never reports itself one.
func (s *Server) modeAndRole() (mode, role string) {
	rp, ok := s.pipe.(*replicated)
	if !ok {
		return "standalone", "standalone"
	}
	r := rp.rep.Status().Role
	if r == replica.RoleLeader {
		return "leader", string(r)
	}
	return "follower", string(r)
}

// sortedConns returns the open client connections in the order they were
// accepted (cons, connections).
func (s *Server) sortedConns() []*conn {
	s.connsMu.Lock()
	cs := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		cs = append(cs, c)
	}
	s.connsMu.Unlock()
	sort.Slice(cs, func(i, j int) bool { return cs[i].id < cs[j].id })
	return cs
}

func (s *Server) writeCons(b *strings.Builder) {
	for _, c := range s.sortedConns() {
		fmt.Fprintf(b, " /%s[1](queued=%d,recved=%d,sent=%d,sid=%s,est=%d,to=%d)\n",
			c.nc.RemoteAddr(), len(c.slots), c.received.Load(), c.sent.Load(), sessionHex(c.sessionID()),
			c.since.UnixMilli(), c.timeout.Milliseconds())
	}
}

func (s *Server) writeConf(b *strings.Builder) {
	lo, hi := s.cfg.sessionBounds()
	secure := -1 // ZooKeeper's answer without a secure port, as NoClientPort is
	if s.cfg.SecureClientPort > 0 {
		secure = s.cfg.SecureClientPort
	}
	fmt.Fprintf(b, "clientPort=%d\nclientPortAddress=%s\nsecureClientPort=%d\ndataDir=%s\ndataLogDir=%s\ntickTime=%d\n",
		s.cfg.ClientPort, s.cfg.ClientAddr, secure, s.cfg.SnapDir(), s.cfg.LogDir(), s.cfg.TickTime.Milliseconds())
	fmt.Fprintf(b, "maxClientCnxns=%d\nminSessionTimeout=%d\nmaxSessionTimeout=%d\nserverId=%d\n",
		s.cfg.MaxClientCnxns, lo.Milliseconds(), hi.Milliseconds(), s.cfg.ServerID)
	fmt.Fprintf(b, "jute.maxbuffer=%d\nsnapCount=%d\nautopurge.snapRetainCount=%d\nforceSync=%v\n",
		s.cfg.MaxPacket, s.cfg.SnapCount, s.cfg.SnapRetainCount, s.cfg.ForceSync)
	if s.cfg.Replicated() {
		// As a ZooKeeper quorum peer: the membership this server has
		// applied, in /zookeeper/config's format.
		m, _, _ := s.membership.get()
		b.WriteString("membership: \n")
		b.Write(m.Encode())
	}
}

// watched is one data watch of a session: ZooKeeper's wchc and wchp
// list only its data-watch manager's watches.
type watched struct {
	path    string
	session int64
}

// dataWatches returns every data watch, by path then watcher.
func (s *Server) dataWatches() []watched {
	type pair struct {
		p string
		w watch.WatcherID
	}
	var all []pair
	s.watchMu.Lock()
	s.watches.Dump(func(p string, w watch.WatcherID, m watch.Mode) {
		if m&^watch.Child != 0 {
			all = append(all, pair{p, w})
		}
	})
	s.watchMu.Unlock()
	out := make([]watched, len(all))
	for i, x := range all {
		out[i].path = x.p
		if c := s.connByID(x.w); c != nil {
			out[i].session = c.sessionID()
		}
	}
	return out
}

func (s *Server) writeWatches(b *strings.Builder, byConn bool) {
	all := s.dataWatches()
	if byConn {
		sort.SliceStable(all, func(i, j int) bool { return all[i].session < all[j].session })
		for i, x := range all {
			if i == 0 || x.session != all[i-1].session {
				fmt.Fprintf(b, "%s\n", sessionHex(x.session))
			}
			fmt.Fprintf(b, "\t%s\n", x.path)
		}
		return
	}
	for i, x := range all {
		if i == 0 || x.path != all[i-1].path {
			fmt.Fprintf(b, "%s\n", x.path)
		}
		fmt.Fprintf(b, "\t%s\n", sessionHex(x.session))
	}
}

func (s *Server) writeDump(b *strings.Builder) {
	s.treeMu.RLock()
	sessions := s.tree.Sessions()
	b.WriteString("SessionTracker dump:\n")
	fmt.Fprintf(b, "Session Sets (%d):\n", len(sessions))
	for _, si := range sessions {
		fmt.Fprintf(b, "%s\t%dms\n", sessionHex(si.ID), si.Timeout)
	}
	b.WriteString("ephemeral nodes dump:\n")
	var with []string
	for _, si := range sessions {
		eph := s.tree.Ephemerals(si.ID, "/")
		if len(eph) == 0 {
			continue
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s:\n", sessionHex(si.ID))
		for _, p := range eph {
			fmt.Fprintf(&sb, "\t%s\n", p)
		}
		with = append(with, sb.String())
	}
	s.treeMu.RUnlock()
	fmt.Fprintf(b, "Sessions with Ephemerals (%d):\n", len(with))
	for _, w := range with {
		b.WriteString(w)
	}
}

func (s *Server) writeEnvi(b *strings.Builder) {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	b.WriteString("Environment:\n")
	fmt.Fprintf(b, "zookeeper.version=%s\nhost.name=%s\ngo.version=%s\nos.name=%s\nos.arch=%s\nuser.dir=%s\nGOMAXPROCS=%d\n",
		Version, host, runtime.Version(), runtime.GOOS, runtime.GOARCH, wd, runtime.GOMAXPROCS(0))
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}
