// Package local starts the hierarchical lock service on this machine
// (`giraffe hc start`): a master ensemble, active and standby worker
// ensembles (each a classic ensemble of `giraffe server` processes, started
// by internal/launcher) and a daemon process, under one directory, with
// the layout recorded in DIR/hc.json so that `giraffe hc status` and
// `giraffe hc stop` find them again.
package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/hc/master"
	"github.com/giraffe-coord/giraffe/internal/jsonfile"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// portStride separates the ports of the ensembles: ensemble k (the master
// is 0, then the workers in order) takes its ports from BasePort+k*100.
const portStride = 100

// Spec says what to start.
type Spec struct {
	// Dir holds everything: master/, w1/, w2/, ..., daemon.log, hc.json.
	Dir string
	// Workers active and Standby standby worker ensembles.
	Workers, Standby int
	// Nodes is the number of servers of every ensemble (classic).
	Nodes int
	// Threshold and Split are the daemon's (giraffe hc daemon).
	Threshold int
	Split     string
	// BasePort is the master's first port.
	BasePort int
	// Binary is the giraffe executable; empty means this process's.
	Binary string
}

// Ensemble is one started ensemble.
type Ensemble struct {
	// ID is "master" or the worker's id.
	ID      string              `json:"id"`
	Dir     string              `json:"dir"`
	Connect string              `json:"connect"`
	State   layout.ClusterState `json:"state,omitempty"`
}

// Service is the recorded layout of a started service.
type Service struct {
	Spec      Spec       `json:"spec"`
	Master    Ensemble   `json:"master"`
	Workers   []Ensemble `json:"workers"`
	DaemonPID int        `json:"daemon_pid"`
	DaemonLog string     `json:"daemon_log"`
}

func recordPath(dir string) string { return filepath.Join(dir, "hc.json") }

// Load reads the service recorded in dir.
func Load(dir string) (*Service, error) {
	var s Service
	if err := jsonfile.Read(recordPath(dir), &s); os.IsNotExist(err) {
		return nil, fmt.Errorf("no lock service in %s (start one with `giraffe hc start --dir %s`): %w", dir, dir, err)
	} else if err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Service) save() error { return jsonfile.Write(recordPath(s.Spec.Dir), s) }

// Start starts the ensembles, sets up the master, registers the workers
// (w1.. active, the next ones standby) and starts the daemon. On an error
// it stops what it had started.
func Start(spec Spec, timeout time.Duration) (*Service, error) {
	if spec.Workers < 1 || spec.Standby < 0 || spec.Nodes < 3 {
		return nil, errors.New("need --workers >= 1, --standby >= 0 and --nodes >= 3 (a replicated ensemble)")
	}
	// Each ensemble's servers take the launcher's ports per server, which
	// must fit in one stride.
	perEnsemble := (&launcher.Spec{}).PortsPerServer() * spec.Nodes
	if perEnsemble > portStride {
		return nil, fmt.Errorf("--nodes %d needs %d ports per ensemble, more than the %d between ensembles", spec.Nodes, perEnsemble, portStride)
	}
	if spec.BasePort <= 0 || spec.BasePort+(spec.Workers+spec.Standby)*portStride+perEnsemble > 65535 {
		return nil, errors.New("--base-port out of range")
	}
	dir, err := filepath.Abs(spec.Dir)
	if err != nil {
		return nil, err
	}
	spec.Dir = dir
	if old, err := Load(dir); err == nil && alive(old.DaemonPID) {
		return nil, fmt.Errorf("a lock service is already running in %s (daemon pid %d); stop it first", dir, old.DaemonPID)
	}
	if spec.Binary == "" {
		if spec.Binary, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	s := &Service{Spec: spec}
	ok := false
	defer func() {
		if !ok {
			s.Stop(5 * time.Second)
		}
	}()
	start := func(id string, k int) (Ensemble, error) {
		d := filepath.Join(dir, id)
		c, err := launcher.Start(launcher.Spec{Shape: members.Shape{Nodes: spec.Nodes, Classic: true}, Dir: d,
			BasePort: spec.BasePort + k*portStride, Binary: spec.Binary}, timeout)
		if c == nil {
			return Ensemble{}, err
		}
		return Ensemble{ID: id, Dir: d, Connect: c.ConnectString()}, err
	}
	if s.Master, err = start("master", 0); err != nil {
		return nil, fmt.Errorf("master: %w", err)
	}
	for i := 1; i <= spec.Workers+spec.Standby; i++ {
		e, err := start(fmt.Sprintf("w%d", i), i)
		if e.Dir != "" {
			e.State = layout.Active
			if i > spec.Workers {
				e.State = layout.Standby
			}
			s.Workers = append(s.Workers, e)
		}
		if err != nil {
			return nil, fmt.Errorf("worker w%d: %w", i, err)
		}
	}
	if err := s.setUp(timeout); err != nil {
		return nil, err
	}
	if err := s.startDaemon(); err != nil {
		return nil, err
	}
	if err := s.save(); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// setUp creates the master's layout and registers the workers.
func (s *Service) setUp(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := client.Connect(ctx, strings.Split(s.Master.Connect, ","))
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := master.Init(ctx, conn); err != nil {
		return err
	}
	for _, w := range s.Workers {
		if err := master.Register(ctx, conn, w.ID, w.Connect, w.State); err != nil {
			return err
		}
	}
	return nil
}

// startDaemon starts `giraffe hc daemon` in its own session, so that it
// outlives the command that started it, logging to DIR/daemon.log.
func (s *Service) startDaemon() error {
	s.DaemonLog = filepath.Join(s.Spec.Dir, "daemon.log")
	lf, err := os.OpenFile(s.DaemonLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := exec.Command(s.Spec.Binary, "hc", "daemon", "--master", s.Master.Connect, "--name", "local",
		"--threshold", strconv.Itoa(s.Spec.Threshold), "--split", s.Spec.Split)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the daemon: %w", err)
	}
	s.DaemonPID = cmd.Process.Pid
	go cmd.Wait() // reap it if it exits while this process runs
	return nil
}

// Stop stops the daemon and every ensemble: SIGTERM, then SIGKILL after
// grace.
func (s *Service) Stop(grace time.Duration) error {
	if alive(s.DaemonPID) {
		syscall.Kill(s.DaemonPID, syscall.SIGTERM)
		deadline := time.Now().Add(grace)
		for alive(s.DaemonPID) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(s.DaemonPID) {
			syscall.Kill(s.DaemonPID, syscall.SIGKILL)
		}
	}
	var errs []error
	for _, e := range append([]Ensemble{s.Master}, s.Workers...) {
		if e.Dir == "" {
			continue
		}
		c, err := launcher.Load(e.Dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.Stop(grace)
	}
	return errors.Join(errs...)
}

// alive reports whether process pid runs (and is not a zombie).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	st := string(b)
	if i := strings.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) {
		return st[i+2] != 'Z'
	}
	return true
}
