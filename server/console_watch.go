package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/internal/watch"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// The console's live watches: GET /ui/api/watch?path=P holds a persistent
// ZooKeeper watch on P (its data, its creation and deletion, its children)
// for as long as the page keeps the stream open, and sends each event as
// a server-sent event. The watch is registered as any client's, with an
// id from the connections' id space, and is told only what an
// unauthenticated client may read.

// liveWatchKeepAlive is how often an idle stream gets a comment line, so
// proxies and the browser keep it open.
const liveWatchKeepAlive = 15 * time.Second

// liveWatches are the console's open watch streams.
type liveWatches struct {
	mu      sync.Mutex
	streams map[watch.WatcherID]chan watch.Event
	// stopped is closed when the admin port stops: the streams end, so
	// the HTTP server's shutdown does not wait for them.
	stopped chan struct{}
}

func newLiveWatches() *liveWatches {
	return &liveWatches{streams: map[watch.WatcherID]chan watch.Event{}, stopped: make(chan struct{})}
}

// deliver hands ev to stream w if it is one; it reports whether it was.
// A stream that cannot keep up loses events, not the applier's time: the
// page re-reads the znode on any event anyway.
func (lw *liveWatches) deliver(w watch.WatcherID, ev watch.Event) bool {
	lw.mu.Lock()
	ch, ok := lw.streams[w]
	lw.mu.Unlock()
	if ok {
		select {
		case ch <- ev:
		default:
		}
	}
	return ok
}

// stop ends every stream.
func (lw *liveWatches) stop() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	select {
	case <-lw.stopped:
	default:
		close(lw.stopped)
	}
}

// liveWatchHandler serves GET /ui/api/watch?path=P.
func (s *Server) liveWatchHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	path := r.URL.Query().Get("path")
	if err := zkproto.ValidatePath(path, false); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	// Like a client's watch: registered under the tree lock, so no change
	// slips between the page's read and the watch.
	s.connsMu.Lock()
	s.nextConnID++
	id := s.nextConnID
	s.connsMu.Unlock()
	events := make(chan watch.Event, 64)
	s.liveWatches.mu.Lock()
	s.liveWatches.streams[id] = events
	s.liveWatches.mu.Unlock()
	s.treeMu.RLock()
	s.watchMu.Lock()
	s.watches.Add(path, watch.Persistent, id)
	s.watchMu.Unlock()
	s.treeMu.RUnlock()
	defer func() {
		s.watchMu.Lock()
		s.watches.RemoveWatcher(id)
		s.watchMu.Unlock()
		s.liveWatches.mu.Lock()
		delete(s.liveWatches.streams, id)
		s.liveWatches.mu.Unlock()
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// "ready": the watch is in place; the page reads the znode now.
	fmt.Fprintf(w, "event: ready\ndata: {\"path\":%q}\n\n", path)
	flusher.Flush()
	keep := time.NewTicker(liveWatchKeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.liveWatches.stopped:
			return
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case ev := <-events:
			b, _ := json.Marshal(map[string]any{"type": ev.Type.String(), "path": ev.Path,
				"zxid": fmt.Sprintf("0x%x", uint64(ev.Zxid))})
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", b)
		}
		flusher.Flush()
	}
}

// readableByAnyone reports whether an unauthenticated client may read a
// node with this ACL: the console's watches tell only what it may read.
func readableByAnyone(list []zkproto.ACL) bool { return acl.Check(list, zkproto.PermRead, nil) }
