package server

import (
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/internal/watch"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// handle serves one request frame; it returns a close reason, or "".
func (c *conn) handle(frame []byte) string {
	s := c.s
	d := zkproto.NewDecoder(frame)
	var h zkproto.RequestHeader
	if err := h.Decode(d); err != nil {
		s.log.Warn("closing connection: malformed request header", "remote", c.nc.RemoteAddr().String(),
			"session", sessionHex(c.sessionID()))
		s.metrics.badInput.Inc()
		return "malformed request header"
	}
	s.metrics.requests.WithLabelValues(h.Op.String()).Inc()
	switch h.Op {
	case zkproto.OpPing:
		c.ordered(func() {
			// A ping answered is a client told its session lives: not
			// once this server has stopped serving, even if the ping
			// waited behind writes.
			if ok, why := s.servingFor(0); !ok {
				c.close("server not serving: " + why)
				return
			}
			c.reply(zkproto.XidPing, s.pipe.lastZxid(), zkproto.OK, nil)
		})
		return ""
	case zkproto.OpCloseSession:
		sid := c.sessionID()
		if !s.sessions.MarkClosing(sid) {
			return "session already closing"
		}
		c.enqueueProposal(&proposal{entry: &txn.Entry{Session: sid, Op: txn.Op{Kind: txn.KindCloseSession}},
			applied: func(res txn.Result, e *txn.Entry) {
				s.sessions.Remove(sid)
				c.reply(h.Xid, e.Zxid, zkproto.OK, nil)
				c.closeAfterFlush()
			}})
		return ""
	case zkproto.OpWhoAmI:
		c.ordered(func() { c.reply(h.Xid, s.pipe.lastZxid(), zkproto.OK, c.whoAmI()) })
		return ""
	case zkproto.OpSASL:
		// No SASL provider is configured: digest auth (op 100) is the way in.
		c.ordered(func() { c.reply(h.Xid, s.pipe.lastZxid(), zkproto.ErrUnimplemented, nil) })
		return ""
	}
	if !h.Op.Known() || h.Op == zkproto.OpNotification || h.Op == zkproto.OpCreateSession ||
		h.Op == zkproto.OpDeleteContainer || h.Op == zkproto.OpError {
		// As ZooKeeper's UnimplementedRequestProcessor: answer, then close.
		s.log.Warn("closing connection: unknown opcode", "remote", c.nc.RemoteAddr().String(),
			"session", sessionHex(c.sessionID()), "op", int32(h.Op))
		s.metrics.badInput.Inc()
		c.ordered(func() { c.reply(h.Xid, s.pipe.lastZxid(), zkproto.ErrUnimplemented, nil) })
		c.closeAfterFlush()
		return ""
	}
	req, err := zkproto.DecodeRequest(h.Op, d)
	if err != nil {
		s.log.Info("malformed request body", "remote", c.nc.RemoteAddr().String(),
			"session", sessionHex(c.sessionID()), "op", h.Op.String(), "err", err)
		s.metrics.badInput.Inc()
		c.ordered(func() { c.reply(h.Xid, s.pipe.lastZxid(), zkproto.ErrMarshallingError, nil) })
		return ""
	}
	if code, body, refused := s.quar.refuse(h.Op, req); refused {
		if s.cfg.Replicated() {
			// The other members hold the namespace whole: the client
			// fails over to one of them.
			return "the request uses a namespace quarantined on this server"
		}
		c.ordered(func() { c.reply(h.Xid, s.pipe.lastZxid(), code, body) })
		return ""
	}
	switch r := req.(type) {
	case *zkproto.ReconfigRequest:
		c.reconfig(h.Xid, r)
		return ""
	case *zkproto.AuthPacket:
		return c.auth(h.Xid, r)
	case *zkproto.SetWatches:
		c.ordered(func() {
			c.setWatches(r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches, nil, nil)
			c.reply(h.Xid, s.pipe.lastZxid(), zkproto.OK, nil)
		})
		return ""
	case *zkproto.SetWatches2:
		c.ordered(func() {
			c.setWatches(r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches,
				r.PersistentWatches, r.PersistentRecursiveWatches)
			c.reply(h.Xid, s.pipe.lastZxid(), zkproto.OK, nil)
		})
		return ""
	}
	if isWrite(h.Op) {
		c.write(h, req)
		return ""
	}
	if h.Op == zkproto.OpSync {
		// Standalone: the pipeline is the total order, so answering after
		// everything submitted before it is exactly sync's guarantee. In an
		// ensemble the sync is a marker entry through the log.
		sr := req.(*zkproto.SyncRequest)
		c.enqueueProposal(&proposal{sync: true, applied: func(txn.Result, *txn.Entry) {
			c.reply(h.Xid, s.pipe.lastZxid(), zkproto.OK, &zkproto.SyncResponse{Path: sr.Path})
		}})
		return ""
	}
	start := time.Now()
	c.ordered(func() {
		body, code := c.read(h.Op, req)
		c.reply(h.Xid, s.pipe.lastZxid(), code, body)
		s.observeRequest(h.Op, time.Since(start))
	})
	return ""
}

// isWrite reports whether op changes the tree and so goes through the log.
func isWrite(op zkproto.OpCode) bool {
	switch op {
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL,
		zkproto.OpDelete, zkproto.OpSetData, zkproto.OpSetACL, zkproto.OpCheck, zkproto.OpMulti:
		return true
	}
	return false
}

// write validates a write request, orders it and answers once applied, or,
// for a weak write in the shortcircuit mode, once ordered (weak.go).
func (c *conn) write(h zkproto.RequestHeader, req zkproto.Record) {
	s := c.s
	op, bad := s.toOp(h.Op, req)
	ns, weak, mixedAt := writeNamespace(s.cfg.Namespaces, &op)
	if bad == nil && mixedAt >= 0 {
		bad = s.refuseMixed(&op, mixedAt, c.sessionID())
	}
	if bad == nil {
		bad = s.checkQuota(&op)
	}
	if bad != nil {
		// Refused before ordering: nothing changes, so no entry is logged.
		c.ordered(func() { c.reply(h.Xid, s.pipe.lastZxid(), bad.code, bad.multi) })
		return
	}
	e := &txn.Entry{Session: c.sessionID(), Auth: c.authIDs(), Op: op}
	start := time.Now()
	pr := &proposal{entry: e}
	pr.applied = func(res txn.Result, e *txn.Entry) {
		if pr.earlyResult != nil {
			s.weakCommitted(pr, res, e)
			return
		}
		code, body := writeReply(h.Op, &op, &res)
		c.reply(h.Xid, e.Zxid, code, body)
		s.observeRequest(h.Op, time.Since(start))
	}
	if weak && s.shortCircuit() {
		pr.early = func(res txn.Result, zxid int64) {
			if res.Err == zkproto.ErrSessionMoved {
				return // the commit closes the connection (refuseMoved)
			}
			pr.earlyResult = txn.MarshalResult(nil, &res)
			code, body := writeReply(h.Op, &op, &res)
			c.order.early(pr, func() {
				c.reply(h.Xid, zxid, code, body)
				s.metrics.weakEarly.Inc()
				s.metrics.weakEarlyNS.WithLabelValues(ns.Root()).Inc()
				s.observeRequest(h.Op, time.Since(start))
			})
		}
	}
	c.enqueueProposal(pr)
}

// writeReply shapes the reply of an applied write.
func writeReply(op zkproto.OpCode, o *txn.Op, res *txn.Result) (zkproto.Code, zkproto.Record) {
	if op == zkproto.OpMulti && (res.Multi != nil || res.Err == zkproto.OK) {
		return zkproto.OK, multiResponse(o.Ops, res.Multi)
	}
	if res.Err != zkproto.OK {
		return res.Err, nil
	}
	return zkproto.OK, opResponse(o.OpCode, res)
}

// opResponse is the reply body of one successful write op.
func opResponse(op zkproto.OpCode, res *txn.Result) zkproto.Record {
	switch op {
	case zkproto.OpCreate:
		return &zkproto.CreateResponse{Path: res.Path}
	case zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL:
		return &zkproto.Create2Response{Path: res.Path, Stat: res.Stat}
	case zkproto.OpSetData:
		return &zkproto.SetDataResponse{Stat: res.Stat}
	case zkproto.OpSetACL:
		return &zkproto.SetACLResponse{Stat: res.Stat}
	}
	return nil // delete, check
}

// multiResponse builds a multi reply: typed results when every op
// succeeded, ZooKeeper's error shape otherwise.
func multiResponse(ops []txn.Op, results []txn.Result) *zkproto.MultiResponse {
	failed := false
	for i := range results {
		if results[i].Err != zkproto.OK {
			failed = true
		}
	}
	out := &zkproto.MultiResponse{Results: make([]zkproto.MultiResult, len(results))}
	for i := range results {
		if failed {
			out.Results[i] = zkproto.MultiResult{Op: zkproto.OpError, Err: results[i].Err,
				Resp: &zkproto.ErrorResponse{Err: results[i].Err}}
			continue
		}
		out.Results[i] = zkproto.MultiResult{Op: ops[i].OpCode, Resp: opResponse(ops[i].OpCode, &results[i])}
	}
	return out
}

// refusal is a write rejected before it is ordered.
type refusal struct {
	code  zkproto.Code
	multi zkproto.Record // the multi-shaped reply, for a refused multi
}

// toOp turns a write request into the op that is ordered, after the checks
// that need no state and depend on this server's configuration: data size,
// whether TTL nodes are enabled, and the namespace roots no client may
// delete.
func (s *Server) toOp(op zkproto.OpCode, req zkproto.Record) (txn.Op, *refusal) {
	if op == zkproto.OpMulti {
		mr := req.(*zkproto.MultiRequest)
		o := txn.Op{Kind: txn.KindMulti, OpCode: zkproto.OpMulti, Ops: make([]txn.Op, len(mr.Ops))}
		for i, m := range mr.Ops {
			sub, code := s.singleOp(m.Op, m.Req)
			if code != zkproto.OK {
				return o, &refusal{code: zkproto.OK, multi: multiRefusal(len(mr.Ops), i, code)}
			}
			o.Ops[i] = sub
		}
		return o, nil
	}
	o, code := s.singleOp(op, req)
	if code != zkproto.OK {
		return o, &refusal{code: code}
	}
	return o, nil
}

// multiRefusal is the reply of a multi whose op i failed validation.
func multiRefusal(n, failed int, code zkproto.Code) *zkproto.MultiResponse {
	out := &zkproto.MultiResponse{Results: make([]zkproto.MultiResult, n)}
	for i := range out.Results {
		c := zkproto.OK
		switch {
		case i == failed:
			c = code
		case i > failed:
			c = zkproto.ErrRuntimeInconsistency
		}
		out.Results[i] = zkproto.MultiResult{Op: zkproto.OpError, Err: c, Resp: &zkproto.ErrorResponse{Err: c}}
	}
	return out
}

// singleOp converts and validates one (non-multi) write.
func (s *Server) singleOp(op zkproto.OpCode, req zkproto.Record) (txn.Op, zkproto.Code) {
	var o txn.Op
	o.OpCode = op
	switch r := req.(type) {
	case *zkproto.CreateRequest:
		o.Kind, o.Path, o.Data, o.ACL, o.Flags = txn.KindCreate, r.Path, r.Data, r.ACL, r.Flags
		if op == zkproto.OpCreateContainer {
			o.Flags = zkproto.ModeContainer
		}
	case *zkproto.CreateTTLRequest:
		o.Kind, o.Path, o.Data, o.ACL, o.Flags, o.TTL = txn.KindCreate, r.Path, r.Data, r.ACL, r.Flags, r.TTL
	case *zkproto.DeleteRequest:
		o.Kind, o.Path, o.Version = txn.KindDelete, r.Path, r.Version
	case *zkproto.SetDataRequest:
		o.Kind, o.Path, o.Data, o.Version = txn.KindSetData, r.Path, r.Data, r.Version
	case *zkproto.SetACLRequest:
		o.Kind, o.Path, o.ACL, o.Version = txn.KindSetACL, r.Path, r.ACL, r.Version
	case *zkproto.CheckVersionRequest:
		o.Kind, o.Path, o.Version = txn.KindCheck, r.Path, r.Version
	default:
		return o, zkproto.ErrBadArguments
	}
	// Path syntax is checked by Apply, in ZooKeeper's order of checks, so
	// that a request with several faults gets ZooKeeper's error code.
	ttlMode := o.Flags == zkproto.ModePersistentWithTTL || o.Flags == zkproto.ModePersistentSequentialWithTTL
	if o.Kind == txn.KindCreate && (op == zkproto.OpCreateTTL || ttlMode) && !s.cfg.ExtendedTypes {
		return o, zkproto.ErrUnimplemented
	}
	if len(o.Data) > s.cfg.MaxDataBytes {
		return o, zkproto.ErrBadArguments
	}
	if o.Kind == txn.KindDelete && s.protectedPath(o.Path) {
		// As for ZooKeeper's system nodes (DataTree.isSpecialPath).
		return o, zkproto.ErrBadArguments
	}
	return o, zkproto.OK
}

// read answers a read request; the caller holds the tree lock.
func (c *conn) read(op zkproto.OpCode, req zkproto.Record) (zkproto.Record, zkproto.Code) {
	t := c.s.tree
	ids := c.authIDs()
	switch r := req.(type) {
	case *zkproto.GetDataRequest:
		data, stat, code := t.GetData(r.Path, ids)
		if code != zkproto.OK {
			return nil, code
		}
		if r.Path == datatree.ConfigPath {
			data, stat = c.s.configView(data, stat)
		}
		if r.Watch {
			c.addWatch(r.Path, watch.Data)
		}
		return &zkproto.GetDataResponse{Data: data, Stat: stat}, zkproto.OK
	case *zkproto.ExistsRequest:
		stat, code := t.Exists(r.Path, ids)
		if r.Watch {
			switch code {
			case zkproto.OK:
				c.addWatch(r.Path, watch.Data)
			case zkproto.ErrNoNode:
				c.addWatch(r.Path, watch.Exist)
			}
		}
		if code != zkproto.OK {
			return nil, code
		}
		if r.Path == datatree.ConfigPath {
			_, stat = c.s.configView(nil, stat)
		}
		return &zkproto.ExistsResponse{Stat: stat}, zkproto.OK
	case *zkproto.GetChildrenRequest:
		kids, _, code := t.Children(r.Path, ids)
		if code != zkproto.OK {
			return nil, code
		}
		if r.Watch {
			c.addWatch(r.Path, watch.Child)
		}
		return &zkproto.GetChildrenResponse{Children: kids}, zkproto.OK
	case *zkproto.GetChildren2Request:
		kids, stat, code := t.Children(r.Path, ids)
		if code != zkproto.OK {
			return nil, code
		}
		if r.Watch {
			c.addWatch(r.Path, watch.Child)
		}
		return &zkproto.GetChildren2Response{Children: kids, Stat: stat}, zkproto.OK
	case *zkproto.GetACLRequest:
		acls, stat, code := t.GetACL(r.Path, ids)
		if code != zkproto.OK {
			return nil, code
		}
		return &zkproto.GetACLResponse{ACL: acls, Stat: stat}, zkproto.OK
	case *zkproto.GetAllChildrenNumberRequest:
		n, code := t.AllChildrenNumber(r.Path, ids)
		if code != zkproto.OK {
			return nil, code
		}
		return &zkproto.GetAllChildrenNumberResponse{TotalNumber: n}, zkproto.OK
	case *zkproto.GetEphemeralsRequest:
		return &zkproto.GetEphemeralsResponse{Ephemerals: t.Ephemerals(c.sessionID(), r.PrefixPath)}, zkproto.OK
	case *zkproto.AddWatchRequest:
		switch r.Mode {
		case zkproto.AddWatchPersistent:
			c.addWatch(r.Path, watch.Persistent)
		case zkproto.AddWatchPersistentRecursive:
			c.addWatch(r.Path, watch.PersistentRecursive)
		default:
			return nil, zkproto.ErrBadArguments
		}
		return &zkproto.ErrorResponse{Err: zkproto.OK}, zkproto.OK
	case *zkproto.CheckWatchesRequest:
		c.s.watchMu.Lock()
		code := c.s.watches.Check(r.Path, r.Type, c.id)
		c.s.watchMu.Unlock()
		return nil, code
	case *zkproto.RemoveWatchesRequest:
		c.s.watchMu.Lock()
		code := c.s.watches.Remove(r.Path, r.Type, c.id)
		c.s.watchMu.Unlock()
		return nil, code
	case *zkproto.MultiRequest:
		if op != zkproto.OpMultiRead {
			return nil, zkproto.ErrBadArguments
		}
		return c.multiRead(r), zkproto.OK
	}
	return nil, zkproto.ErrUnimplemented
}

// multiRead answers each read of a multiRead independently; a failed op
// gets an error result and the others still answer.
func (c *conn) multiRead(r *zkproto.MultiRequest) *zkproto.MultiResponse {
	out := &zkproto.MultiResponse{Results: make([]zkproto.MultiResult, len(r.Ops))}
	for i, m := range r.Ops {
		var body zkproto.Record
		code := zkproto.ErrBadArguments
		switch m.Req.(type) {
		case *zkproto.GetDataRequest, *zkproto.GetChildrenRequest:
			body, code = c.read(m.Op, m.Req)
		}
		if code != zkproto.OK {
			out.Results[i] = zkproto.MultiResult{Op: zkproto.OpError, Err: code, Resp: &zkproto.ErrorResponse{Err: code}}
			continue
		}
		out.Results[i] = zkproto.MultiResult{Op: m.Op, Resp: body}
	}
	return out
}

func (c *conn) addWatch(path string, mode watch.Mode) {
	c.s.watchMu.Lock()
	c.s.watches.Add(path, mode, c.id)
	c.s.watchMu.Unlock()
}

// whoAmI lists the connection's identities as ZooKeeper does: the scheme and
// the user part of each id.
func (c *conn) whoAmI() *zkproto.WhoAmIResponse {
	ids := c.authIDs()
	out := &zkproto.WhoAmIResponse{ClientInfo: make([]zkproto.ClientInfo, 0, len(ids))}
	for _, id := range ids {
		if id.Scheme == "super" {
			continue
		}
		user := id.ID
		if id.Scheme == "digest" {
			if i := strings.IndexByte(user, ':'); i >= 0 {
				user = user[:i]
			}
		}
		out.ClientInfo = append(out.ClientInfo, zkproto.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	return out
}

// setWatches re-arms a reconnecting client's watches, firing at once those
// whose condition changed after relZxid (DataTree.setWatches).
func (c *conn) setWatches(relZxid int64, data, exist, child, persistent, recursive []string) {
	s := c.s
	t := s.tree
	zxid := s.pipe.lastZxid()
	fire := func(typ zkproto.EventType, path string) {
		c.sendEvent(watch.Event{Type: typ, Path: path, Zxid: zxid})
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	// A data or child watch fires NodeDeleted if its node is gone, or its
	// change event if the node changed after relZxid; otherwise it is
	// re-armed.
	rearm := func(paths []string, mode watch.Mode, changed zkproto.EventType, changedAt func(zkproto.Stat) int64) {
		for _, p := range paths {
			st, ok := t.Stat(p)
			switch {
			case !ok:
				fire(zkproto.EventNodeDeleted, p)
			case changedAt(st) > relZxid:
				fire(changed, p)
			default:
				s.watches.Add(p, mode, c.id)
			}
		}
	}
	// In DataTree.setWatches' order: data, exist, child.
	rearm(data, watch.Data, zkproto.EventNodeDataChanged, func(st zkproto.Stat) int64 { return st.Mzxid })
	for _, p := range exist {
		if _, ok := t.Stat(p); ok {
			fire(zkproto.EventNodeCreated, p)
		} else {
			s.watches.Add(p, watch.Exist, c.id)
		}
	}
	rearm(child, watch.Child, zkproto.EventNodeChildrenChanged, func(st zkproto.Stat) int64 { return st.Pzxid })
	for _, p := range persistent {
		s.watches.Add(p, watch.Persistent, c.id)
	}
	for _, p := range recursive {
		s.watches.Add(p, watch.PersistentRecursive, c.id)
	}
}
