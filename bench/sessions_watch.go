package bench

import (
	"errors"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// watchState is a holder's part in the watch rounds: every session holds
// a one-shot data watch on one znode; when its notification comes, the
// session notes when and sets the watch again at once (getData with
// watch), as a client that follows a znode does. The coordinator starts
// a round (begin) before it changes the znode and then waits until every
// session has its notification and its watch back.
type watchState struct {
	mu    sync.Mutex
	path  string
	round int
	// arrived and rearmed, per session, for the current round: when its
	// notification arrived (Unix nanoseconds) and whether its watch is
	// set again.
	arrived map[*liveSession]int64
	rearmed map[*liveSession]bool
	// unexpected counts notifications of another kind or znode, second
	// notifications in one round, and watches that could not be set
	// again; why the first was is in unexpectedText.
	unexpected     int
	unexpectedText string
	changed        chan struct{}
}

// begin makes later notifications count for round r.
func (w *watchState) begin(r int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.round = r
	w.arrived = map[*liveSession]int64{}
	w.rearmed = map[*liveSession]bool{}
}

// signal wakes a wait.
func (w *watchState) signal() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// oddity counts an unexpected event; mu is held.
func (w *watchState) oddity(text string) {
	w.unexpected++
	if w.unexpectedText == "" {
		w.unexpectedText = text
	}
}

// notified returns s's notification handler (liveSession.onNotify); now
// is the holder's clock.
func (w *watchState) notified(s *liveSession, now func() int64) func(zkproto.WatcherEvent, time.Time) {
	return func(ev zkproto.WatcherEvent, at time.Time) {
		w.mu.Lock()
		switch {
		case w.arrived == nil || ev.Type != zkproto.EventNodeDataChanged || ev.Path != w.path:
			w.oddity("notification " + ev.Type.String() + " of " + ev.Path)
			w.mu.Unlock()
			return
		case w.arrived[s] != 0:
			w.oddity("a second notification in one round")
			w.mu.Unlock()
			return
		}
		w.arrived[s] = at.UnixNano()
		round, path := w.round, w.path
		w.mu.Unlock()
		// The reply comes on this goroutine's next reads; the send
		// must not wait for it.
		err := s.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: path, Watch: true}, now(), func(code zkproto.Code, _ []byte) {
			w.mu.Lock()
			defer w.mu.Unlock()
			switch {
			case code == zkproto.ErrConnectionLoss || code == zkproto.ErrSessionExpired:
				// A lost watcher: the holder counts it.
			case code != zkproto.OK:
				w.oddity("setting the watch again: " + code.String())
			case w.round == round:
				w.rearmed[s] = true
			}
			w.signal()
		})
		if err != nil && !errors.Is(err, zkproto.ErrConnectionLoss) {
			w.mu.Lock()
			w.oddity("setting the watch again: " + err.Error())
			w.mu.Unlock()
		}
		w.signal()
	}
}

// wait waits up to d for every one of sessions to have its notification
// of round r and its watch back, or to have lost its connection; lost
// counts the sessions whose connection ended so far, a cheap bound that
// spares a scan of every session at each wake. It returns when each
// notification arrived (0: none, -1: none, the connection lost) and how
// many sessions have both.
func (w *watchState) wait(sessions []*liveSession, r int, d time.Duration, lost func() int) ([]int64, int) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for waiting := true; waiting; {
		w.mu.Lock()
		waiting = w.round != r || (len(w.rearmed) < len(sessions) &&
			(len(w.rearmed)+lost() < len(sessions) || w.waitingFor(sessions) > 0))
		w.mu.Unlock()
		if waiting {
			select {
			case <-w.changed:
			case <-deadline.C:
				waiting = false
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	arrivals := make([]int64, len(sessions))
	done := 0
	for i, s := range sessions {
		if w.round == r {
			arrivals[i] = w.arrived[s]
			if w.rearmed[s] {
				done++
			}
		}
		if arrivals[i] == 0 && s.ended() {
			arrivals[i] = -1
		}
	}
	return arrivals, done
}

// waitingFor counts the sessions still connected that do not have their
// watch back; mu is held.
func (w *watchState) waitingFor(sessions []*liveSession) int {
	n := 0
	for _, s := range sessions {
		if !w.rearmed[s] && !s.ended() {
			n++
		}
	}
	return n
}

// arm sets every session's watch on op.Path.
func (h *holder) arm(op holderOp) holderReply {
	h.watch.mu.Lock()
	h.watch.path = op.Path
	h.watch.mu.Unlock()
	return h.each(op, func(op holderOp, s *liveSession) error {
		return h.call(s, zkproto.OpGetData, []zkproto.Record{&zkproto.GetDataRequest{Path: op.Path, Watch: true}})
	})
}

// report adds to a reply the oddities seen since the last report.
func (w *watchState) report(rep *holderReply) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rep.Errors += w.unexpected
	if rep.ErrorText == "" {
		rep.ErrorText = w.unexpectedText
	}
	w.unexpected, w.unexpectedText = 0, ""
}
