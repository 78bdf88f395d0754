package sim

import "container/heap"

// event is something that happens at a virtual time (µs). Ties are broken by
// the order in which events were scheduled, so runs are deterministic.
type event struct {
	at  int64
	seq uint64
	fn  func()
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// clock is the simulator's virtual time and its pending events.
type clock struct {
	now int64
	seq uint64
	q   eventQueue
}

// after schedules fn at now+d µs.
func (c *clock) after(d int64, fn func()) {
	c.seq++
	heap.Push(&c.q, event{at: c.now + max(d, 0), seq: c.seq, fn: fn})
}

// step runs the next event no later than until; false when there is none.
func (c *clock) step(until int64) bool {
	if len(c.q) == 0 || c.q[0].at > until {
		return false
	}
	e := heap.Pop(&c.q).(event)
	c.now = e.at
	e.fn()
	return true
}
