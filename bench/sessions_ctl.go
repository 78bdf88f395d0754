package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// ctlTimeout bounds one request of the coordinator's own session; it is
// also the session timeout that session asks for.
const ctlTimeout = 30 * time.Second

// ctlSession is the coordinator's own session, which makes a phase's
// znodes, counts the expire phase's ephemerals and changes the watch
// phase's znode. A loaded server may close its connection; it then comes
// back as a ZooKeeper client does (the same session, on the next server,
// with backoff, within SessionsConfig.OpenTimeout), and what it was doing
// is asked again when that is safe (retry).
type ctlSession struct {
	servers []string
	budget  time.Duration
	s       *session
	// stopPings stops the keep-alive of s.
	stopPings func()
	// Reconnects counts the connections it lost and opened again.
	Reconnects int
}

// openCtl opens the coordinator's session: on the first server, or
// refused there, on the next ones.
func openCtl(ctx context.Context, cfg SessionsConfig) (*ctlSession, error) {
	ss, err := dialAll(ctx, cfg.Servers, 1, 64, cfg.OpenTimeout)
	if err != nil {
		return nil, fmt.Errorf("the coordinator's session: %w", err)
	}
	c := &ctlSession{servers: cfg.Servers, budget: cfg.OpenTimeout, s: ss[0]}
	c.stopPings = c.s.keepAlive()
	return c, nil
}

// close ends the connection (the servers expire the session).
func (c *ctlSession) close() {
	c.stopPings()
	c.s.close()
}

// retry runs f on the session until it succeeds or fails otherwise than by
// the connection: after a lost connection (or a request left unanswered
// for ctlTimeout) it reconnects and runs f again, so f must be safe to
// repeat (a read, a create that takes NODEEXISTS as done). It gives up
// once the budget has passed since the first loss: servers that take the
// session back and lose it again at once do not let the phase go on.
func (c *ctlSession) retry(ctx context.Context, f func(s *session) error) error {
	var since time.Time
	for {
		err := f(c.s)
		var code zkproto.Code
		if err == nil || errors.As(err, &code) {
			return err
		}
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) > c.budget {
			return fmt.Errorf("the coordinator's session keeps losing its connection (for %v): %w", c.budget, err)
		}
		if rerr := c.reconnect(ctx, err); rerr != nil {
			return rerr
		}
	}
}

// reconnect resumes the session on the next servers after its connection
// failed with cause; a session expired meanwhile is replaced by a new one
// (it holds nothing).
func (c *ctlSession) reconnect(ctx context.Context, cause error) error {
	c.stopPings()
	c.s.fail()
	c.Reconnects++
	b := newBackoff(c.budget)
	var s *session
	dialer := func(old *session) func(addr string, end time.Time) error {
		return func(addr string, end time.Time) error {
			var err error
			s, err = redial(addr, old, ctlTimeout, 64, attemptDeadline(end))
			return err
		}
	}
	_, err := b.retry(ctx, c.servers, c.Reconnects, dialer(c.s))
	if errors.Is(err, errSessionExpired) {
		_, err = b.retry(ctx, c.servers, c.Reconnects, dialer(nil))
	}
	if err != nil {
		return fmt.Errorf("the coordinator's session, lost (%v), does not come back: %w", cause, err)
	}
	c.s = s
	c.stopPings = s.keepAlive()
	return nil
}

// call sends one request on s and waits for its reply; done, if not nil,
// sees the reply's body (valid during the call only). It returns the
// reply's code and when the reply arrived.
func call(s *session, op zkproto.OpCode, req zkproto.Record, done func([]byte)) (zkproto.Code, time.Time, error) {
	type reply struct {
		code zkproto.Code
		at   time.Time
	}
	got := make(chan reply, 1)
	s.reader()
	err := s.send(op, req, func(code zkproto.Code, body []byte, _ time.Time) {
		at := time.Now()
		if done != nil && code == zkproto.OK {
			done(body)
		}
		got <- reply{code, at}
	})
	if err == nil {
		err = s.flush()
	}
	if err != nil {
		return 0, time.Time{}, err
	}
	select {
	case r := <-got:
		return r.code, r.at, nil
	case <-s.readDone:
		// The reader hands a reply over before it stops: one that came
		// just before the connection closed (a closeSession's) counts.
		select {
		case r := <-got:
			return r.code, r.at, nil
		default:
		}
		return 0, time.Time{}, s.stopErr
	case <-time.After(ctlTimeout):
		return 0, time.Time{}, fmt.Errorf("%v: no reply within %v", op, ctlTimeout)
	}
}

// numChildren returns the number of children of path, asking again after
// a lost connection.
func (c *ctlSession) numChildren(ctx context.Context, path string) (int, error) {
	var st zkproto.Stat
	err := c.retry(ctx, func(s *session) error {
		code, _, err := call(s, zkproto.OpExists, &zkproto.ExistsRequest{Path: path}, func(b []byte) {
			st.Decode(zkproto.NewDecoder(b))
		})
		if err == nil && code != zkproto.OK {
			err = fmt.Errorf("exists %s: %w", path, code)
		}
		return err
	})
	return int(st.NumChildren), err
}

// createNodes creates paths (createNodes), again after a lost connection.
func (c *ctlSession) createNodes(ctx context.Context, paths []string) error {
	return c.retry(ctx, func(s *session) error { return createNodes(s, paths, nil) })
}
