package client

import "sync"

// pump delivers values to a channel in order through an unbounded queue,
// so that the goroutine producing them (the reader, the session loop) never
// blocks on a slow consumer: blocking the reader would starve pings and
// lose the session. One goroutine per pump; it exits once the queue is
// finished and drained, or when the Conn is closed (abort).
type pump[T any] struct {
	mu       sync.Mutex
	q        []T
	finished bool
	wake     chan struct{}
	out      chan T
}

// newPump starts a pump tracked by c.pumpWG and stopped by c.abort.
func newPump[T any](c *Conn) *pump[T] {
	p := &pump[T]{wake: make(chan struct{}, 1), out: make(chan T)}
	c.pumpWG.Add(1)
	go func() {
		defer c.pumpWG.Done()
		p.run(c.abort)
	}()
	return p
}

// push queues v; values pushed after finish are dropped.
func (p *pump[T]) push(v T) {
	p.mu.Lock()
	if !p.finished {
		p.q = append(p.q, v)
	}
	p.mu.Unlock()
	p.signal()
}

// finish lets the pump close its channel once the queue is drained.
func (p *pump[T]) finish() {
	p.mu.Lock()
	p.finished = true
	p.mu.Unlock()
	p.signal()
}

func (p *pump[T]) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *pump[T]) run(abort <-chan struct{}) {
	defer close(p.out)
	for {
		p.mu.Lock()
		if len(p.q) == 0 {
			done := p.finished
			p.q = nil
			p.mu.Unlock()
			if done {
				return
			}
			select {
			case <-p.wake:
			case <-abort:
				return
			}
			continue
		}
		v := p.q[0]
		var zero T
		p.q[0] = zero
		p.q = p.q[1:]
		p.mu.Unlock()
		select {
		case p.out <- v:
		case <-abort:
			return
		}
	}
}
