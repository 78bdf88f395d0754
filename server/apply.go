package server

import (
	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/internal/watch"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// applyEntry applies one ordered entry to the tree; the applier holds the
// tree lock. It returns the watch triggers the entry caused.
func (s *Server) applyEntry(e *txn.Entry, res *txn.Result) []datatree.Trigger {
	r, trig := s.tree.Apply(e)
	*res = r
	s.metrics.applied.Inc()
	return trig
}

// triggerWatches turns the triggers of one entry into notifications queued
// on the watching connections. It runs with the tree lock held, so a
// notification is queued before any reply that shows the new state can be
// (ZooKeeper's ordering guarantee).
func (s *Server) triggerWatches(trig []datatree.Trigger, out []watch.Delivery) []watch.Delivery {
	if len(trig) == 0 {
		return out
	}
	for _, t := range trig {
		start := len(out)
		s.watchMu.Lock()
		out = s.watches.Trigger(watch.Event{Type: t.Type, Path: t.Path, Zxid: t.Zxid}, out)
		s.watchMu.Unlock()
		for _, d := range out[start:] {
			// As ZooKeeper 3.9 (ServerCnxn.process): a watcher without READ
			// on the node is not told.
			if c := s.connByID(d.Watcher); c != nil {
				if acl.Check(t.ACL, zkproto.PermRead, c.authIDs()) {
					c.sendEvent(d.Event)
				}
			} else if readableByAnyone(t.ACL) {
				s.liveWatches.deliver(d.Watcher, d.Event)
			}
		}
	}
	return out
}
