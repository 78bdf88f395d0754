// Package launcher starts, inspects and stops a local Giraffe ensemble: N
// `giraffe server` processes on 127.0.0.1, each with its own zoo.cfg, data
// directory and log file under one directory. `giraffe cluster` is its
// command line; the integration tests use it too. The layout is recorded in
// DIR/cluster.json so that later commands (status, kill, restart, stop) find
// the servers again, and the ensemble's admin token in DIR/admin.token
// (readable by its owner only), which every server's admin port demands
// and the commands that change the ensemble present.
package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/jsonfile"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// Spec says what ensemble to start.
type Spec struct {
	members.Shape
	// Dir holds everything; it is created.
	Dir string
	// BasePort: server i (from 1) serves clients on BasePort+i-1, talks
	// to its peers on BasePort+Nodes+i-1, serves metrics on
	// BasePort+2*Nodes+i-1 and its admin port (membership changes, fault
	// injection) on BasePort+3*Nodes+i-1.
	BasePort int
	// Binary is the giraffe executable to run; empty means this process's.
	Binary string
	// TickMs is the protocol tick (0: the server's default); ElectionTicks
	// likewise.
	TickMs, ElectionTicks int
	// NoSync turns fsync off (tests only).
	NoSync bool
	// FaultInjection lets Cluster.Fault inject faults (tests only):
	// giraffe.faultInjection=true in every zoo.cfg.
	FaultInjection bool
	// TLS makes a throw-away certificate authority in Dir/tls and gives
	// every server a certificate, a secure client port (the fifth port:
	// BasePort+4*Nodes+i-1) and mutual TLS with its peers (sslQuorum);
	// see tls.go.
	TLS bool
	// Extra lines appended to every zoo.cfg.
	Extra []string
	// Force lets Start delete the data of a stopped cluster of another
	// shape in Dir (Cluster.reuse).
	Force bool `json:"-"`
}

// Server is one member as recorded in cluster.json.
type Server struct {
	ID         members.ID `json:"id"`
	ClientAddr string     `json:"client_address"`
	PeerAddr   string     `json:"peer_address"`
	// MetricsAddr serves /metrics, read-only.
	MetricsAddr string `json:"metrics_address"`
	// AdminAddr is the admin port: membership changes and fault
	// injection, with the cluster's token.
	AdminAddr string `json:"admin_address"`
	Dir       string `json:"dir"`
	LogFile   string `json:"log"`
	PID       int    `json:"pid"`
	// Joined marks a server added at runtime (Cluster.Join): it starts
	// with --join instead of the server lines.
	Joined bool `json:"joined,omitempty"`
	// AwaitReconfig marks a joined server that waits, as a learner, for
	// a ZooKeeper client's reconfig -add (Cluster.StartLearner).
	AwaitReconfig bool `json:"await_reconfig,omitempty"`
	// SecureClientAddr is the secure client port (Spec.TLS).
	SecureClientAddr string `json:"secure_client_address,omitempty"`
}

// ConsoleURL is the address of the server's web console: /ui/ on its admin
// port.
func (s Server) ConsoleURL() string { return "http://" + s.AdminAddr + "/ui/" }

// Cluster is the recorded layout of a started ensemble.
type Cluster struct {
	Spec    Spec     `json:"spec"`
	Binary  string   `json:"binary"`
	Servers []Server `json:"servers"`
}

// ConnectString returns host:port of every server, comma-separated, as
// ZooKeeper clients take it.
func (c *Cluster) ConnectString() string {
	addrs := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		addrs[i] = s.ClientAddr
	}
	return strings.Join(addrs, ",")
}

func layoutPath(dir string) string { return filepath.Join(dir, "cluster.json") }

// TokenFile returns the file holding the admin token of the cluster in dir.
func TokenFile(dir string) string { return filepath.Join(dir, "admin.token") }

// admin returns a client of the servers' admin ports holding the
// cluster's token.
func (c *Cluster) admin() (adminapi.Client, error) {
	tok, err := adminapi.ReadTokenFile(TokenFile(c.Spec.Dir))
	if err != nil {
		return adminapi.Client{}, fmt.Errorf("the cluster's admin token: %w", err)
	}
	return adminapi.Client{Token: tok}, nil
}

// Load reads the layout recorded in dir.
func Load(dir string) (*Cluster, error) {
	var c Cluster
	if err := jsonfile.Read(layoutPath(dir), &c); os.IsNotExist(err) {
		return nil, fmt.Errorf("no cluster in %s (start one with `giraffe cluster start --dir %s`): %w", dir, dir, err)
	} else if err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Cluster) save() error { return jsonfile.Write(layoutPath(c.Spec.Dir), c) }

// Start writes every server's configuration, starts the processes and
// waits (up to timeout) until one of them reports itself leader.
func Start(spec Spec, timeout time.Duration) (*Cluster, error) {
	if spec.Nodes < 1 || spec.Nodes > 255 {
		return nil, errors.New("--nodes must be in [1,255]")
	}
	if !spec.Classic && (spec.Trees < 1 || spec.Children < 1) {
		return nil, errors.New("need --trees and --children >= 1, or --classic")
	}
	if spec.BasePort <= 0 || spec.BasePort+spec.PortsPerServer()*spec.Nodes > 65535 {
		return nil, errors.New("--base-port out of range")
	}
	dir, err := filepath.Abs(spec.Dir)
	if err != nil {
		return nil, err
	}
	spec.Dir = dir
	if c, err := Load(dir); err == nil {
		for _, s := range c.Servers {
			if alive(s.PID) {
				return nil, fmt.Errorf("a cluster is already running in %s (server %d, pid %d); stop it first", dir, s.ID, s.PID)
			}
		}
		if err := c.reuse(spec); err != nil {
			return nil, err
		}
	}
	bin := spec.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := adminapi.WriteTokenFile(TokenFile(dir)); err != nil {
		return nil, fmt.Errorf("writing the admin token: %w", err)
	}
	c := &Cluster{Spec: spec, Binary: bin}
	for i := 1; i <= spec.Nodes; i++ {
		port := func(k int) string { return fmt.Sprintf("127.0.0.1:%d", spec.BasePort+k*spec.Nodes+i-1) }
		s := Server{ID: members.ID(i), ClientAddr: port(0), PeerAddr: port(1), MetricsAddr: port(2), AdminAddr: port(3),
			Dir: filepath.Join(dir, fmt.Sprintf("s%d", i))}
		if spec.TLS {
			s.SecureClientAddr = port(4)
		}
		s.LogFile = filepath.Join(s.Dir, "server.log")
		c.Servers = append(c.Servers, s)
	}
	if err := c.makeAuthority(); err != nil {
		return nil, err
	}
	for _, s := range c.Servers {
		if err := c.writeConfig(s); err != nil {
			return nil, err
		}
	}
	for i := range c.Servers {
		if err := c.spawn(&c.Servers[i]); err != nil {
			c.Stop(5 * time.Second)
			return nil, err
		}
	}
	if err := c.save(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for _, s := range c.Servers {
		if err := c.WaitStarted(s.ID, time.Until(deadline)); err != nil {
			return c, err
		}
	}
	if err := c.WaitLeader(time.Until(deadline)); err != nil {
		return c, err
	}
	return c, nil
}

// reuse checks that spec may start on the data c left: with the same
// shape and ports, the servers recover their data; a changed one would
// give them a membership their logs do not know, so it is refused unless
// spec.Force, which deletes the servers' directories first.
func (c *Cluster) reuse(spec Spec) error {
	old := c.Spec
	var why string
	switch {
	case old.Shape != spec.Shape || old.BasePort != spec.BasePort || old.TLS != spec.TLS:
		why = fmt.Sprintf("was started as %s, base port %d, tls %v", old.Shape, old.BasePort, old.TLS)
	case len(c.Servers) != spec.Nodes:
		why = fmt.Sprintf("has %d servers since servers joined or left; `cluster restart ID` starts each again", len(c.Servers))
	default:
		return nil
	}
	if !spec.Force {
		return fmt.Errorf("the stopped cluster in %s %s; start it the same way to keep its data, or add --force to delete it", spec.Dir, why)
	}
	for _, s := range c.Servers {
		if err := os.RemoveAll(s.Dir); err != nil {
			return err
		}
	}
	return nil
}

// WaitStarted waits until server id answers on its client port. It fails,
// with the end of the server's log, when the process exits first (a port
// taken, a bad configuration, damaged data) or timeout passes.
func (c *Cluster) WaitStarted(id members.ID, timeout time.Duration) error {
	s, err := c.byID(id)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		if !alive(s.PID) {
			return fmt.Errorf("server %d exited during start-up; the end of %s:\n%s", s.ID, s.LogFile, logTail(s.LogFile, 20))
		}
		if _, err := FourLetter(s.ClientAddr, "srvr", time.Second); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server %d did not open its client port %s within %v; the end of %s:\n%s",
				s.ID, s.ClientAddr, timeout, s.LogFile, logTail(s.LogFile, 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logTail returns the last n lines of the file at path, each indented, or
// why it cannot be read.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	return "  " + strings.Join(lines, "\n  ")
}

// writeConfig writes s's zoo.cfg and myid.
func (c *Cluster) writeConfig(s Server) error {
	data := filepath.Join(s.Dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintln(s.ID)), 0o644); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(s.ClientAddr)
	var b strings.Builder
	_, mport, _ := net.SplitHostPort(s.MetricsAddr)
	ahost, aport, _ := net.SplitHostPort(s.AdminAddr)
	fmt.Fprintf(&b, "# written by giraffe cluster start\ntickTime=2000\ndataDir=%s\nclientPortAddress=%s\nclientPort=%s\nmetricsPort=%s\n",
		data, host, port, mport)
	fmt.Fprintf(&b, "giraffe.adminAddress=%s\ngiraffe.adminPort=%s\ngiraffe.adminTokenFile=%s\n", ahost, aport, TokenFile(c.Spec.Dir))
	b.WriteString("4lw.commands.whitelist=*\n")
	if c.Spec.NoSync {
		b.WriteString("forceSync=no\n")
	}
	if c.Spec.FaultInjection {
		b.WriteString("giraffe.faultInjection=true\n")
	}
	if c.Spec.Classic {
		b.WriteString("giraffe.classic=true\n")
	} else {
		fmt.Fprintf(&b, "giraffe.trees=%d\ngiraffe.children=%d\n", c.Spec.Trees, c.Spec.Children)
	}
	if c.Spec.TickMs > 0 {
		fmt.Fprintf(&b, "giraffe.tickMs=%d\n", c.Spec.TickMs)
	}
	if c.Spec.ElectionTicks > 0 {
		fmt.Fprintf(&b, "giraffe.electionTicks=%d\n", c.Spec.ElectionTicks)
	}
	if !s.Joined {
		for _, p := range c.Servers {
			if !p.Joined {
				fmt.Fprintf(&b, "server.%d=%s;%s\n", p.ID, p.PeerAddr, p.ClientAddr)
				fmt.Fprintf(&b, "giraffe.admin.%d=%s\n", p.ID, p.AdminAddr)
			}
		}
	}
	if err := c.writeTLSConfig(&b, s); err != nil {
		return err
	}
	for _, l := range c.Spec.Extra {
		b.WriteString(l + "\n")
	}
	return os.WriteFile(filepath.Join(s.Dir, "zoo.cfg"), []byte(b.String()), 0o644)
}

// spawn starts s's process (Spawn) and records its pid.
func (c *Cluster) spawn(s *Server) error {
	p, err := c.Spawn(*s)
	if err != nil {
		return err
	}
	s.PID = p.Pid
	return nil
}

// Spawn starts the process of server s in its own session, so that it
// outlives the command that started it, with its output appended to its
// log file, and reaps it when it exits while this process still runs. s
// need not be one of the cluster's servers any more: a test runs a server
// the ensemble removed again from its data directory.
func (c *Cluster) Spawn(s Server) (*os.Process, error) {
	lf, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	args := []string{"server", "--config", filepath.Join(s.Dir, "zoo.cfg")}
	if s.Joined {
		// The first start joins through any member; later ones find the
		// record of the join in the data directory and ignore --join.
		_, pport, _ := net.SplitHostPort(s.PeerAddr)
		args = append(args, "--join", c.anyAdmin(s.ID), "--peer-port", pport, "--id", fmt.Sprint(s.ID))
		if s.AwaitReconfig {
			args = append(args, "--await-reconfig")
		}
	}
	cmd := exec.Command(c.Binary, args...)
	cmd.Env = c.serverEnv()
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting server %d: %w", s.ID, err)
	}
	go cmd.Wait()
	return cmd.Process, nil
}

// serverEnv is the environment of a server process: this one's, plus
// GOMAXPROCS=1 when the ensemble puts two or more servers on each core of
// this machine (unless GOMAXPROCS is set already). A server then gets half
// a core or less, and a Go scheduler per process running threads on every
// core only adds switches between them: measured with `giraffe bench`
// (setData 1 KiB, 8 x 64 outstanding, forest 3-3, 2 cores), 5 servers wrote
// 23,011 and 30,947 writes/s without and with it, 9 servers 14,542 and
// 18,254 (means of three runs); 3 servers, one and a half per core, lost
// about 7% with it, so they keep the default.
func (c *Cluster) serverEnv() []string {
	env := os.Environ()
	if os.Getenv("GOMAXPROCS") == "" && len(c.Servers) >= 2*runtime.NumCPU() {
		env = append(env, "GOMAXPROCS=1")
	}
	return env
}

// byID returns the server with id.
func (c *Cluster) byID(id members.ID) (*Server, error) {
	for i := range c.Servers {
		if c.Servers[i].ID == id {
			return &c.Servers[i], nil
		}
	}
	return nil, fmt.Errorf("no server %d in this cluster", id)
}

// Kill sends SIGKILL to server id.
func (c *Cluster) Kill(id members.ID) error {
	s, err := c.byID(id)
	if err != nil {
		return err
	}
	if !alive(s.PID) {
		return fmt.Errorf("server %d is not running", id)
	}
	return syscall.Kill(s.PID, syscall.SIGKILL)
}

// WaitExited waits up to timeout for server id's process to have exited,
// its files closed and its locks released (a killed process is a zombie,
// no longer alive, some time before its last thread is gone).
func (c *Cluster) WaitExited(id members.ID, timeout time.Duration) error {
	s, err := c.byID(id)
	if err != nil {
		return err
	}
	if !waitDead(s.PID, timeout) {
		return fmt.Errorf("server %d still runs after %v", id, timeout)
	}
	return nil
}

// Signal sends sig to server id (SIGSTOP/SIGCONT pause and resume it).
func (c *Cluster) Signal(id members.ID, sig syscall.Signal) error {
	s, err := c.byID(id)
	if err != nil {
		return err
	}
	return syscall.Kill(s.PID, sig)
}

// Restart starts server id again (killing it first if it still runs).
func (c *Cluster) Restart(id members.ID) error {
	s, err := c.byID(id)
	if err != nil {
		return err
	}
	if !exited(s.PID) {
		syscall.Kill(s.PID, syscall.SIGKILL)
		waitDead(s.PID, 5*time.Second)
	}
	if err := c.spawn(s); err != nil {
		return err
	}
	return c.save()
}

// Stop stops every server: SIGTERM, then SIGKILL after grace.
func (c *Cluster) Stop(grace time.Duration) error {
	for _, s := range c.Servers {
		if alive(s.PID) {
			syscall.Kill(s.PID, syscall.SIGCONT)
			syscall.Kill(s.PID, syscall.SIGTERM)
		}
	}
	for _, s := range c.Servers {
		if !waitDead(s.PID, grace) {
			syscall.Kill(s.PID, syscall.SIGKILL)
			waitDead(s.PID, grace)
		}
	}
	return nil
}

// Fault injects network faults into server id's peer transport (see
// transport.ParseFaultSpec for the syntax: "drop ID P; delay ID D; block ID;
// isolate; heal") and returns the faults now in force there. The servers
// take faults only when the cluster was started with Spec.FaultInjection.
func (c *Cluster) Fault(id members.ID, spec string) (string, error) {
	s, err := c.byID(id)
	if err != nil {
		return "", err
	}
	cl, err := c.admin()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now, err := cl.Fault(ctx, s.AdminAddr, spec)
	if errors.Is(err, adminapi.ErrFaultsUnavailable) {
		return "", fmt.Errorf("server %d: %w; a cluster takes faults only when started with "+
			"`giraffe cluster start --fault-injection` (giraffe.faultInjection=true)", id, err)
	}
	if err != nil {
		return "", fmt.Errorf("server %d: %w", id, err)
	}
	return now, nil
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// exited reports whether process pid has exited and released what it
// held. A killed process's main thread can be a zombie while its other
// threads are still exiting, and its file descriptors (its listening
// sockets among them) close only when the last thread is gone: a server
// restarted before then cannot bind its ports.
func exited(pid int) bool {
	if alive(pid) {
		return false
	}
	// Gone (no /proc entry), or a zombie with no thread but its main one.
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return err != nil || len(tasks) <= 1
}

// waitDead waits up to d for process pid to have exited (exited).
func waitDead(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if exited(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return exited(pid)
}

// anyAdmin returns the admin address of a live server other than except.
func (c *Cluster) anyAdmin(except members.ID) string { return c.liveAdmins(except)[0] }

// liveAdmins returns the admin addresses of the live servers other than
// except (the first server's if none is live).
func (c *Cluster) liveAdmins(except members.ID) []string {
	var out []string
	for _, s := range c.Servers {
		if s.ID != except && alive(s.PID) {
			out = append(out, s.AdminAddr)
		}
	}
	if len(out) == 0 {
		out = append(out, c.Servers[0].AdminAddr)
	}
	return out
}

// Join starts one more server and adds it to the running ensemble (one
// configuration change through the log, ordered by the leader). Its ports
// follow the others': joined server k (from 0) serves clients on
// BasePort+4*Nodes+4k, peers on the next port, metrics on the one after
// and its admin port on the next (JoinPorts).
func (c *Cluster) Join(timeout time.Duration) (*Server, error) {
	s, err := c.spawnJoiner(false)
	if err != nil {
		return nil, err
	}
	id := s.ID
	deadline := time.Now().Add(timeout)
	for {
		// Joined once the change has committed (the record is no longer
		// pending), the server follows a leader and has applied the
		// change itself (its committed configuration lists it), so that
		// whoever asks it next sees the ensemble it joined.
		if r, ok, _ := adminapi.LoadJoinRecord(filepath.Join(s.Dir, "data")); ok && !r.Pending {
			if kv, err := FourLetter(s.ClientAddr, "srvr", time.Second); err == nil && kv["Giraffe leader"] != "" && kv["Giraffe leader"] != "0" {
				if m, err := c.Membership(id); err == nil && slices.ContainsFunc(m.Groups, func(g []members.ID) bool { return slices.Contains(g, id) }) {
					return &c.Servers[len(c.Servers)-1], nil
				}
			}
		}
		if !alive(s.PID) {
			return nil, fmt.Errorf("server %d exited while joining (log: %s)", id, s.LogFile)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("server %d did not join within %v (log: %s)", id, timeout, s.LogFile)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// spawnJoiner starts the next joined server (JoinPorts), asking for the
// change itself or, with await, waiting for a reconfig to make it.
// spawnJoiner starts the next joined server (JoinPorts), asking for the
// change itself or, with await, waiting for a reconfig to make it.
func (c *Cluster) spawnJoiner(await bool) (Server, error) {
	id, k := members.None, 0
	for _, s := range c.Servers {
		id = max(id, s.ID)
		if s.Joined {
			k++
		}
	}
	id++
	base := c.JoinPorts(k)
	if base+c.Spec.PortsPerServer()-1 > 65535 {
		return Server{}, errors.New("no ports left above --base-port for another server")
	}
	port := func(k int) string { return fmt.Sprintf("127.0.0.1:%d", base+k) }
	s := Server{ID: id, Joined: true, AwaitReconfig: await, ClientAddr: port(0), PeerAddr: port(1), MetricsAddr: port(2), AdminAddr: port(3),
		Dir: filepath.Join(c.Spec.Dir, fmt.Sprintf("s%d", id))}
	if c.Spec.TLS {
		s.SecureClientAddr = port(4)
	}
	s.LogFile = filepath.Join(s.Dir, "server.log")
	if err := c.writeConfig(s); err != nil {
		return Server{}, err
	}
	// Only the data directory's myid is wrong for a joined server: its id
	// comes from the join.
	os.Remove(filepath.Join(s.Dir, "data", "myid"))
	if err := c.spawn(&s); err != nil {
		return Server{}, err
	}
	c.Servers = append(c.Servers, s)
	if err := c.save(); err != nil {
		return Server{}, err
	}
	return s, nil
}

// StartLearner starts the next joined server as a learner that waits for
// a ZooKeeper client's reconfig -add (giraffe server --await-reconfig)
// and returns it once it runs with the configuration the join would
// make; Server.ReconfigSpec is the server string to add.
func (c *Cluster) StartLearner(timeout time.Duration) (*Server, error) {
	s, err := c.spawnJoiner(true)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		if _, ok, _ := adminapi.LoadJoinRecord(filepath.Join(s.Dir, "data")); ok {
			// The ensemble sends it nothing until the change that adds it
			// is in the log: running with its record is all there is to
			// wait for.
			if _, err := FourLetter(s.ClientAddr, "srvr", time.Second); err == nil {
				return &c.Servers[len(c.Servers)-1], nil
			}
		}
		if !alive(s.PID) {
			return nil, fmt.Errorf("server %d exited while starting (log: %s)", s.ID, s.LogFile)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("server %d did not start within %v (log: %s)", s.ID, timeout, s.LogFile)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ReconfigSpec is the joining server string of ZooKeeper's reconfig -add
// for s, with Giraffe's giraffe.admin.N naming its admin port.
func (s Server) ReconfigSpec() string {
	return members.Member{ID: s.ID, Peer: s.PeerAddr, Client: s.ClientAddr, Admin: s.AdminAddr}.JoiningSpec()
}

// Leave asks the ensemble to remove server id (giraffe leave), then stops
// its process and forgets it.
func (c *Cluster) Leave(id members.ID, timeout time.Duration) error {
	s, err := c.byID(id)
	if err != nil {
		return err
	}
	cl, err := c.admin()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := cl.Leave(ctx, c.liveAdmins(id), id); err != nil {
		return fmt.Errorf("leave %d: %w", id, err)
	}
	if alive(s.PID) {
		syscall.Kill(s.PID, syscall.SIGTERM)
		if !waitDead(s.PID, 5*time.Second) {
			syscall.Kill(s.PID, syscall.SIGKILL)
		}
	}
	c.Servers = slices.DeleteFunc(c.Servers, func(x Server) bool { return x.ID == id })
	return c.save()
}

// Membership asks server id (None: any live one) for the committed
// membership, on its admin port.
func (c *Cluster) Membership(id members.ID) (adminapi.Membership, error) {
	addr := c.anyAdmin(members.None)
	if id != members.None {
		s, err := c.byID(id)
		if err != nil {
			return adminapi.Membership{}, err
		}
		addr = s.AdminAddr
	}
	cl, err := c.admin()
	if err != nil {
		return adminapi.Membership{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cl.Get(ctx, addr)
}

// PortsPerServer is the number of ports each server takes: client, peer,
// metrics and admin, and the secure client port with TLS.
func (s *Spec) PortsPerServer() int {
	if s.TLS {
		return 5
	}
	return 4
}

// JoinPorts returns the first of the ports of the k-th server (from 0) to
// join the cluster: its client port; its peer, metrics and admin ports
// follow, and, with TLS, its secure client port. Cluster.Join takes them in order; a server joined some other
// way (embed.Join) can take those Join has not.
func (c *Cluster) JoinPorts(k int) int {
	n := c.Spec.PortsPerServer()
	return c.Spec.BasePort + n*c.Spec.Nodes + n*k
}
