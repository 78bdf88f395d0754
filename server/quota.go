package server

import (
	"github.com/giraffe-coord/giraffe/internal/quota"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// This file enforces ZooKeeper 3.7+'s quotas (zookeeper.enforceQuota). The
// statistics are kept by the data tree in the replicated apply
// (datatree.QuotaRoot); the limits are checked here, by the server that
// receives a write, before it is ordered, against its own tree, as
// ZooKeeper's PrepRequestProcessor checks them against the committed tree
// before proposing: a write refused here is never logged, so the replicas
// cannot disagree about it. Like ZooKeeper's, the check does not count
// writes still in flight (several creates pipelined by one client can pass
// together), and an origin's tree can lag behind writes other servers
// took; a client's own writes, answered before it sends the next, are
// always counted.

// checkQuota refuses op with QUOTAEXCEEDED when one of its creates or
// setDatas would exceed a hard quota, and logs the soft quotas it
// exceeds, as ZooKeeper does; without enforceQuota it checks nothing (as
// ZooKeeper, which then does not log either).
func (s *Server) checkQuota(o *txn.Op) *refusal {
	if !s.cfg.EnforceQuota {
		return nil
	}
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	if o.Kind == txn.KindMulti {
		for i := range o.Ops {
			if code := s.quotaCode(&o.Ops[i]); code != zkproto.OK {
				return &refusal{code: zkproto.OK, multi: multiRefusal(len(o.Ops), i, code)}
			}
		}
		return nil
	}
	if code := s.quotaCode(o); code != zkproto.OK {
		return &refusal{code: code}
	}
	return nil
}

// quotaCode checks one op against the quota governing its path; the tree
// lock is held.
func (s *Server) quotaCode(o *txn.Op) zkproto.Code {
	var count, bytes int64
	switch o.Kind {
	case txn.KindCreate:
		count, bytes = 1, int64(len(o.Data))
	case txn.KindSetData:
		st, ok := s.tree.Stat(o.Path)
		if !ok {
			return zkproto.OK // the apply answers NONODE
		}
		bytes = int64(len(o.Data)) - int64(st.DataLength)
	default:
		return zkproto.OK
	}
	root := s.tree.QuotaRoot(o.Path)
	if root == "" {
		return zkproto.OK
	}
	if _, ok := s.tree.Stat(quota.StatPath(root)); !ok {
		s.log.Error("missing quota stats node", "path", quota.StatPath(root))
		return zkproto.OK
	}
	limits, stats := s.tree.QuotaRecords(root)
	for _, e := range quota.Check(limits, stats, count, bytes) {
		kind := "soft"
		if e.Hard {
			kind = "hard"
		}
		s.log.Warn("quota exceeded", "quota", root, "path", o.Path, "what", e.What, "value", e.Value, "limit", e.Limit, "limitKind", kind)
		if e.Hard {
			return zkproto.ErrQuotaExceeded
		}
	}
	return zkproto.OK
}
