package transport

import (
	"container/heap"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// inbox holds received messages until they are due (inbound delay faults)
// and the Recv channel's reader takes them. It is bounded in messages and
// bytes; readers of connections wait when it is full, which stops reading
// the sockets and lets TCP push back on the senders, whose queues then
// drop. One message is always admitted into an empty inbox so that a
// snapshot larger than the byte bound still gets through.
type inbox struct {
	mu       sync.Mutex
	items    inHeap
	seq      uint64
	bytes    int
	maxLen   int
	maxBytes int
	// kick wakes the dispatcher after a push; space wakes a waiting pusher
	// after a pop. Both have capacity one: a pending signal is enough.
	kick  chan struct{}
	space chan struct{}
}

type inItem struct {
	m    gpaxos.Message
	size int
	due  time.Time
	seq  uint64 // arrival order, which breaks ties of due
}

func newInbox(maxLen, maxBytes int) *inbox {
	return &inbox{maxLen: maxLen, maxBytes: maxBytes, kick: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

// tryPush adds the message unless the inbox is full.
func (b *inbox) tryPush(m gpaxos.Message, size int, due time.Time) bool {
	b.mu.Lock()
	if len(b.items) > 0 && (len(b.items) >= b.maxLen || b.bytes+size > b.maxBytes) {
		b.mu.Unlock()
		return false
	}
	b.seq++
	heap.Push(&b.items, inItem{m: m, size: size, due: due, seq: b.seq})
	b.bytes += size
	b.mu.Unlock()
	signal(b.kick)
	return true
}

// push adds the message, waiting for room; it returns false when stop is
// closed first.
func (b *inbox) push(m gpaxos.Message, size int, due time.Time, stop <-chan struct{}) bool {
	waited := false
	for !b.tryPush(m, size, due) {
		waited = true
		select {
		case <-b.space:
		case <-stop:
			return false
		}
	}
	if waited {
		// Pass the wake-up on: several pops may have posted one signal,
		// and other pushers may be waiting for the room left.
		signal(b.space)
	}
	return true
}

// popDue removes the messages due at now, in order, at most max of them.
// When none is, it returns the time at which the first one will be (zero
// when the inbox is empty).
func (b *inbox) popDue(now time.Time, max int) (ms []gpaxos.Message, next time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.items) > 0 && len(ms) < max {
		if head := b.items[0]; head.due.After(now) {
			if len(ms) == 0 {
				next = head.due
			}
			break
		}
		it := heap.Pop(&b.items).(inItem)
		b.bytes -= it.size
		ms = append(ms, it.m)
	}
	if len(ms) > 0 {
		signal(b.space)
	}
	return ms, next
}

// inHeap orders items by due time, then arrival. Per-link FIFO follows
// because Faults.route never gives a later message of a link an earlier
// due time than an earlier one, and arrival breaks ties.
type inHeap []inItem

func (h inHeap) Len() int { return len(h) }
func (h inHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h inHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *inHeap) Push(x any)   { *h = append(*h, x.(inItem)) }
func (h *inHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = inItem{} // release the message for the collector
	*h = old[:len(old)-1]
	return it
}

// signal posts a wake-up on a capacity-one channel without blocking.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
