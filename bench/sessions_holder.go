package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// A holder holds a share of the sessions benchmark's sessions, in this
// process or in a worker process (sessions_worker.go), and does to them
// what the coordinator asks, one operation at a time. The operations and
// their answers are plain structs so that they cross a pipe as JSON.

// Holder operations (holderOp.Op).
const (
	opOpen       = "open"       // connect sessions First..First+Count-1 and keep them alive
	opStatus     = "status"     // counters: sessions alive and lost, pings
	opEphemerals = "ephemerals" // every session creates Ephemerals ephemeral znodes under Path
	opArm        = "arm"        // every session sets a data watch on Path (getData with watch)
	opBegin      = "begin"      // notifications from now on belong to round Round
	opWait       = "wait"       // wait up to WaitMs for every session's round-Round notification and re-arm
	opDrop       = "drop"       // close every connection without closing its session
	opClose      = "close"      // close every session (closeSession), then its connection
)

// holderOp is one operation asked of a holder.
type holderOp struct {
	Op string `json:"op"`
	// Servers, TimeoutMs, OpenTimeoutMs, Source, PerSource and
	// Concurrency: how opOpen connects session i: to Servers[i mod len]
	// (after a refusal, to the next server, with backoff, for up to
	// OpenTimeoutMs), from the Source address plus i/PerSource (Source
	// empty: any address), asking for TimeoutMs, Concurrency sessions
	// at a time.
	Servers       []string `json:"servers,omitempty"`
	First         int      `json:"first,omitempty"`
	Count         int      `json:"count,omitempty"`
	TimeoutMs     int64    `json:"timeout_ms,omitempty"`
	OpenTimeoutMs int64    `json:"open_timeout_ms,omitempty"`
	Source        string   `json:"source,omitempty"`
	PerSource     int      `json:"per_source,omitempty"`
	Concurrency   int      `json:"concurrency,omitempty"`
	Path          string   `json:"path,omitempty"`
	Ephemerals    int      `json:"ephemerals,omitempty"`
	Round         int      `json:"round,omitempty"`
	WaitMs        int64    `json:"wait_ms,omitempty"`
}

// holderReply is a holder's answer.
type holderReply struct {
	Err string `json:"err,omitempty"`
	// Held is the sessions the holder holds after the operation.
	Held int `json:"held"`
	// Failed and Retries count the sessions opOpen could not open and
	// the handshakes it tried again; FirstError says why the first
	// attempt that failed did.
	Failed     int    `json:"failed,omitempty"`
	Retries    int    `json:"retries,omitempty"`
	FirstError string `json:"first_error,omitempty"`
	// MinTimeoutMs and MaxTimeoutMs are the negotiated session timeouts.
	MinTimeoutMs int64 `json:"min_timeout_ms,omitempty"`
	MaxTimeoutMs int64 `json:"max_timeout_ms,omitempty"`
	// Lost counts connections that ended without the benchmark closing
	// them; LostError is why the first did.
	Lost      int    `json:"lost"`
	LostError string `json:"lost_error,omitempty"`
	Pings     int64  `json:"pings"`
	Pongs     int64  `json:"pongs"`
	// Done counts the sessions whose operation succeeded (ephemerals
	// created, watches set, sessions closed); Errors the requests that
	// failed, ErrorText the first failure.
	Done      int    `json:"done"`
	Errors    int    `json:"errors,omitempty"`
	ErrorText string `json:"error_text,omitempty"`
	// Arrivals are, for opWait, the wall-clock times (Unix nanoseconds)
	// at which each session's notification of the round arrived, 0 for
	// a session that got none, -1 for one whose connection was lost
	// without it.
	Arrivals []int64 `json:"arrivals,omitempty"`
}

// holder is the sessions of one process.
type holder struct {
	start    time.Time
	mu       sync.Mutex
	sessions []*liveSession
	lost     atomic.Int64
	lostErr  atomic.Value // string
	pingStop chan struct{}
	pingDone chan struct{}
	pings    atomic.Int64
	// watch is the state of the watch rounds.
	watch watchState
}

func newHolder() *holder {
	return &holder{start: time.Now(), watch: watchState{changed: make(chan struct{}, 1)}}
}

// now is the holder's clock, in nanoseconds.
func (h *holder) now() int64 { return int64(time.Since(h.start)) }

// do runs one operation.
func (h *holder) do(op holderOp) holderReply {
	var rep holderReply
	var err error
	switch op.Op {
	case opOpen:
		rep, err = h.open(op)
	case opStatus:
	case opEphemerals:
		rep = h.each(op, h.createEphemerals)
	case opArm:
		rep = h.arm(op)
	case opBegin:
		h.watch.begin(op.Round)
	case opWait:
		h.mu.Lock()
		sessions := h.sessions
		h.mu.Unlock()
		rep.Arrivals, rep.Done = h.watch.wait(sessions, op.Round, time.Duration(op.WaitMs)*time.Millisecond,
			func() int { return int(h.lost.Load()) })
		h.watch.report(&rep)
	case opDrop:
		h.drop()
	case opClose:
		rep = h.closeAll(op)
	default:
		err = fmt.Errorf("unknown operation %q", op.Op)
	}
	if err != nil {
		rep.Err = err.Error()
	}
	h.status(&rep)
	return rep
}

// status fills the counters every reply carries.
func (h *holder) status(rep *holderReply) {
	h.mu.Lock()
	rep.Held = len(h.sessions)
	var pongs int64
	for _, s := range h.sessions {
		pongs += s.pongs.Load()
	}
	h.mu.Unlock()
	rep.Lost = int(h.lost.Load())
	if e, ok := h.lostErr.Load().(string); ok {
		rep.LostError = e
	}
	rep.Pings, rep.Pongs = h.pings.Load(), pongs
}

// sourceOf returns the local address session i connects from: base plus
// i/perSource in its last bytes (nil when base is empty).
func sourceOf(base string, perSource, i int) (net.IP, error) {
	if base == "" {
		return nil, nil
	}
	ip := net.ParseIP(base).To4()
	if ip == nil {
		return nil, fmt.Errorf("bench: source address %q is not IPv4", base)
	}
	n := uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
	n += uint32(i / max(perSource, 1))
	return net.IPv4(byte(n>>24), byte(n>>16), byte(n>>8), byte(n)), nil
}

// open connects sessions op.First to op.First+op.Count-1, Concurrency at
// a time, and starts pinging. A session keeps its place among the
// Concurrency while it waits to try again, so that refusals slow the
// opening down as they slow down a ZooKeeper client.
func (h *holder) open(op holderOp) (holderReply, error) {
	var rep holderReply
	if len(op.Servers) == 0 || op.TimeoutMs <= 0 {
		return rep, errors.New("open: no servers or no timeout")
	}
	timeout := time.Duration(op.TimeoutMs) * time.Millisecond
	b := newBackoff(time.Duration(op.OpenTimeoutMs) * time.Millisecond)
	if b.budget <= 0 {
		b.budget = DefaultOpenTimeout
	}
	sem := make(chan struct{}, max(op.Concurrency, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := op.First; i < op.First+op.Count; i++ {
		src, err := sourceOf(op.Source, op.PerSource, i)
		if err != nil {
			return rep, err
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			var s *liveSession
			retries, err := b.retry(context.Background(), op.Servers, i, func(addr string, end time.Time) error {
				var err error
				s, err = h.dialLive(i, addr, src, timeout, attemptDeadline(end))
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			rep.Retries += retries
			if err != nil {
				rep.Failed++
				if rep.FirstError == "" {
					rep.FirstError = fmt.Sprintf("session %d (first to %s) from %v: %v", i, op.Servers[i%len(op.Servers)], src, err)
				}
				return
			}
			ms := s.timeout.Milliseconds()
			if rep.MinTimeoutMs == 0 || ms < rep.MinTimeoutMs {
				rep.MinTimeoutMs = ms
			}
			rep.MaxTimeoutMs = max(rep.MaxTimeoutMs, ms)
		}()
	}
	wg.Wait()
	h.startPinging(timeout)
	return rep, nil
}

// dialLive opens session i, adds it to the holder and starts its reader.
func (h *holder) dialLive(i int, addr string, src net.IP, timeout time.Duration, deadline time.Time) (*liveSession, error) {
	s, br, err := dialLive(addr, src, timeout, deadline)
	if err != nil {
		return nil, err
	}
	s.index = i
	s.onNotify = h.watch.notified(s, h.now)
	h.mu.Lock()
	h.sessions = append(h.sessions, s)
	h.mu.Unlock()
	s.start(br, h.now)
	go h.watchLoss(s)
	return s, nil
}

// watchLoss counts s as lost if its connection ends without the
// benchmark closing it.
func (h *holder) watchLoss(s *liveSession) {
	<-s.done
	if s.closing.Load() {
		return
	}
	h.lost.Add(1)
	h.lostErr.CompareAndSwap(nil, fmt.Sprintf("session %d (0x%x): %v", s.index, s.id, s.err))
	// A watch round waiting for this session's notification need not.
	h.watch.signal()
}

// startPinging starts (once) the goroutine that pings every session a
// third of its timeout after it last sent anything, as ZooKeeper's
// clients do (the Java client's readTimeout/2, with readTimeout two
// thirds of the negotiated timeout).
func (h *holder) startPinging(timeout time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pingStop != nil {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	h.pingStop, h.pingDone = stop, done
	tick := min(100*time.Millisecond, timeout/30)
	go func() {
		defer close(done)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			h.mu.Lock()
			sessions := h.sessions
			h.mu.Unlock()
			now := h.now()
			for _, s := range sessions {
				if sent, err := s.ping(now, int64(s.timeout/3)); sent && err == nil {
					h.pings.Add(1)
				}
			}
		}
	}()
}

// stopPinging stops the pinging goroutine.
func (h *holder) stopPinging() {
	h.mu.Lock()
	stop, done := h.pingStop, h.pingDone
	h.pingStop = nil
	h.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// each runs f on every session, op.Concurrency at a time, and counts
// the sessions it succeeded on and those it failed on. A session whose
// connection is lost, before or during f, counts in neither: the holder
// counts it as lost (watchLoss), which a phase reports without failing.
func (h *holder) each(op holderOp, f func(op holderOp, s *liveSession) error) holderReply {
	var rep holderReply
	h.mu.Lock()
	sessions := h.sessions
	h.mu.Unlock()
	sem := make(chan struct{}, max(op.Concurrency, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, s := range sessions {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if s.ended() {
				return
			}
			err := f(op, s)
			if errors.Is(err, zkproto.ErrConnectionLoss) || errors.Is(err, zkproto.ErrSessionExpired) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				rep.Errors++
				if rep.ErrorText == "" {
					rep.ErrorText = fmt.Sprintf("session %d: %v", s.index, err)
				}
				return
			}
			rep.Done++
		}()
	}
	wg.Wait()
	return rep
}

// requestTimeout bounds the wait for the replies of one session's
// requests in an operation.
const requestTimeout = 60 * time.Second

// call sends the requests and waits for every reply; it fails on the
// first error code.
func (h *holder) call(s *liveSession, op zkproto.OpCode, bodies []zkproto.Record) error {
	replies := make(chan zkproto.Code, len(bodies))
	for _, b := range bodies {
		if err := s.send(op, b, h.now(), func(code zkproto.Code, _ []byte) { replies <- code }); err != nil {
			return err
		}
	}
	timer := time.NewTimer(requestTimeout)
	defer timer.Stop()
	for range bodies {
		select {
		case code := <-replies:
			if code != zkproto.OK {
				return fmt.Errorf("%v: %w", op, code)
			}
		case <-timer.C:
			return fmt.Errorf("%v: no reply within %v", op, requestTimeout)
		}
	}
	return nil
}

// createEphemerals creates op.Ephemerals ephemeral znodes of s under
// op.Path, all in flight at once.
func (h *holder) createEphemerals(op holderOp, s *liveSession) error {
	bodies := make([]zkproto.Record, op.Ephemerals)
	for j := range bodies {
		bodies[j] = &zkproto.CreateRequest{Path: op.Path + "/s" + strconv.Itoa(s.index) + "-" + strconv.Itoa(j),
			ACL: zkproto.OpenACLUnsafe, Flags: zkproto.ModeEphemeral}
	}
	return h.call(s, zkproto.OpCreate, bodies)
}

// drop closes every connection without closing its session.
func (h *holder) drop() {
	h.stopPinging()
	h.mu.Lock()
	sessions := h.sessions
	h.sessions = nil
	h.mu.Unlock()
	for _, s := range sessions {
		s.drop()
	}
}

// closeAll closes every session, op.Concurrency at a time.
func (h *holder) closeAll(op holderOp) holderReply {
	h.stopPinging()
	rep := h.each(op, func(_ holderOp, s *liveSession) error { return s.closeSession(h.now(), 10*time.Second) })
	h.mu.Lock()
	h.sessions = nil
	h.mu.Unlock()
	return rep
}
