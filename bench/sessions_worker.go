package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// The sessions benchmark holds more connections than one process may open
// (the open-file limit): past SessionsConfig.PerProcess it starts worker
// processes, each running ServeSessionsWorker on its standard input and
// output, and spreads the sessions over them. The coordinator sends each
// worker one operation at a time as a line of JSON (holderOp) and reads
// one line back (holderReply); a worker whose input ends drops its
// sessions and exits, so none outlives a coordinator that died.

// ServeSessionsWorker is the body of a worker process of the sessions
// benchmark (`giraffe bench sessions --worker`): it does the operations
// read from in, one JSON object a line, on the sessions this process
// holds, and writes each answer to out, until in ends.
func ServeSessionsWorker(in io.Reader, out io.Writer) error {
	h := newHolder()
	defer h.drop()
	dec := json.NewDecoder(in)
	enc := json.NewEncoder(out)
	for {
		var op holderOp
		if err := dec.Decode(&op); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := enc.Encode(h.do(op)); err != nil {
			return err
		}
	}
}

// holderClient is a holder as the coordinator sees it: in this process
// or in a worker.
type holderClient interface {
	do(op holderOp) (holderReply, error)
	pid() int
	stop() error
}

// localHolder is a holder in this process.
type localHolder struct{ h *holder }

func (l localHolder) do(op holderOp) (holderReply, error) {
	rep := l.h.do(op)
	if rep.Err != "" {
		return rep, errors.New(rep.Err)
	}
	return rep, nil
}

func (l localHolder) pid() int { return os.Getpid() }

func (l localHolder) stop() error {
	l.h.drop()
	return nil
}

// workerHolder is a holder in a worker process.
type workerHolder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	enc   *json.Encoder
	dec   *json.Decoder
}

// startWorker starts cmd, which must run ServeSessionsWorker.
func startWorker(cmd *exec.Cmd) (*workerHolder, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: starting a sessions worker: %w", err)
	}
	return &workerHolder{cmd: cmd, stdin: stdin, enc: json.NewEncoder(stdin), dec: json.NewDecoder(stdout)}, nil
}

func (w *workerHolder) do(op holderOp) (holderReply, error) {
	var rep holderReply
	if err := w.enc.Encode(op); err != nil {
		return rep, fmt.Errorf("bench: sessions worker %d: %w", w.pid(), err)
	}
	if err := w.dec.Decode(&rep); err != nil {
		return rep, fmt.Errorf("bench: sessions worker %d: %w", w.pid(), err)
	}
	if rep.Err != "" {
		return rep, fmt.Errorf("bench: sessions worker %d: %s", w.pid(), rep.Err)
	}
	return rep, nil
}

func (w *workerHolder) pid() int { return w.cmd.Process.Pid }

// stop ends the worker's input, and kills it if it has not exited 30
// seconds later.
func (w *workerHolder) stop() error {
	w.stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- w.cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(30 * time.Second):
		w.cmd.Process.Kill()
		return <-exited
	}
}

// pool is the holders of one phase's sessions.
type pool []holderClient

// newPool makes the holders of n sessions: this process when n is at
// most perProcess or worker is nil, else ceil(n/perProcess) workers.
func newPool(n, perProcess int, worker func() *exec.Cmd) (pool, error) {
	if worker == nil || n <= perProcess {
		return pool{localHolder{newHolder()}}, nil
	}
	var p pool
	for k := (n + perProcess - 1) / perProcess; k > 0; k-- {
		w, err := startWorker(worker())
		if err != nil {
			p.stop()
			return nil, err
		}
		p = append(p, w)
	}
	return p, nil
}

// share returns the first session and the count of holder j's share of n.
func (p pool) share(j, n int) (first, count int) {
	first = j * n / len(p)
	return first, (j+1)*n/len(p) - first
}

// all runs op(j) on every holder j at once and returns their replies.
func (p pool) all(op func(j int) holderOp) ([]holderReply, error) {
	reps := make([]holderReply, len(p))
	errs := make([]error, len(p))
	var wg sync.WaitGroup
	for j, h := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[j], errs[j] = h.do(op(j))
		}()
	}
	wg.Wait()
	return reps, errors.Join(errs...)
}

// pids returns the holders' processes.
func (p pool) pids() []int {
	var pids []int
	for _, h := range p {
		pids = append(pids, h.pid())
	}
	return pids
}

// stop stops every holder.
func (p pool) stop() {
	for _, h := range p {
		h.stop()
	}
}
