package client

import (
	"context"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// Op is one operation of a Multi (CreateOp, DeleteOp, SetOp, CheckOp) or of
// a MultiRead (GetDataOp, GetChildrenOp).
type Op struct {
	op  zkproto.OpCode
	req zkproto.Record
}

// CreateOp creates a node in a Multi (any mode; TTL modes need
// CreateTTLOp).
func CreateOp(path string, data []byte, mode CreateMode, acl []zkproto.ACL) Op {
	op, req := createRequest(path, data, mode, acl, 0)
	return Op{op: op, req: req}
}

// CreateTTLOp creates a TTL node in a Multi.
func CreateTTLOp(path string, data []byte, mode CreateMode, acl []zkproto.ACL, ttl time.Duration) Op {
	op, req := createRequest(path, data, mode, acl, ttl.Milliseconds())
	return Op{op: op, req: req}
}

// DeleteOp deletes a node in a Multi.
func DeleteOp(path string, version int32) Op {
	return Op{op: zkproto.OpDelete, req: &zkproto.DeleteRequest{Path: path, Version: version}}
}

// SetOp sets a node's data in a Multi.
func SetOp(path string, data []byte, version int32) Op {
	return Op{op: zkproto.OpSetData, req: &zkproto.SetDataRequest{Path: path, Data: data, Version: version}}
}

// CheckOp fails the Multi unless the node's version is version.
func CheckOp(path string, version int32) Op {
	return Op{op: zkproto.OpCheck, req: &zkproto.CheckVersionRequest{Path: path, Version: version}}
}

// GetDataOp reads a node in a MultiRead.
func GetDataOp(path string) Op {
	return Op{op: zkproto.OpGetData, req: &zkproto.GetDataRequest{Path: path}}
}

// GetChildrenOp lists a node's children in a MultiRead.
func GetChildrenOp(path string) Op {
	return Op{op: zkproto.OpGetChildren, req: &zkproto.GetChildrenRequest{Path: path}}
}

// OpResult is the result of one op of a Multi or MultiRead.
type OpResult struct {
	// Op is the opcode of the op this result answers.
	Op zkproto.OpCode
	// Err is the op's error: in a failed Multi, the failing op has its
	// own code, the ops before it nil, those after it
	// ErrRuntimeInconsistency (none of them took effect).
	Err error
	// Path is the created path (create ops).
	Path string
	// Stat is set for creates, SetOp and GetDataOp.
	Stat *zkproto.Stat
	// Data is the data read by GetDataOp.
	Data []byte
	// Children are the names listed by GetChildrenOp.
	Children []string
}

// MultiAsync queues a multi: the write ops are applied atomically, all or
// none. The result has one OpResult per op; the call's error is the first
// op's error when the multi failed.
func (c *Conn) MultiAsync(ops ...Op) *Call[[]OpResult] {
	return c.multiAsync(zkproto.OpMulti, ops, true)
}

// Multi runs ops atomically (see MultiAsync). The results are returned
// with the error when the multi failed, so the caller can see which op
// failed.
func (c *Conn) Multi(ctx context.Context, ops ...Op) ([]OpResult, error) {
	return c.MultiAsync(ops...).Wait(ctx)
}

// MultiReadAsync queues a multiRead of GetDataOp and GetChildrenOp ops,
// answered from one consistent state. Each op succeeds or fails on its
// own: errors are in the OpResults, not in the call's error.
func (c *Conn) MultiReadAsync(ops ...Op) *Call[[]OpResult] {
	return c.multiAsync(zkproto.OpMultiRead, ops, false)
}

// MultiRead runs read ops together (see MultiReadAsync).
func (c *Conn) MultiRead(ctx context.Context, ops ...Op) ([]OpResult, error) {
	return c.MultiReadAsync(ops...).Wait(ctx)
}

func (c *Conn) multiAsync(opcode zkproto.OpCode, ops []Op, atomic bool) *Call[[]OpResult] {
	req := &zkproto.MultiRequest{Ops: make([]zkproto.MultiOp, len(ops))}
	for i, o := range ops {
		req.Ops[i] = zkproto.MultiOp{Op: o.op, Req: o.req}
	}
	resp := &zkproto.MultiResponse{}
	cl := newCall(opcode, req, resp)
	c.submit(cl)
	return newTyped(cl, func(cl *call) ([]OpResult, error) {
		if cl.err != nil {
			return nil, cl.err
		}
		if len(resp.Results) != len(ops) {
			return nil, zkproto.ErrMarshallingError
		}
		out := make([]OpResult, len(ops))
		var first error
		for i, r := range resp.Results {
			out[i] = opResult(ops[i].op, r)
			if first == nil && out[i].Err != nil {
				first = out[i].Err
			}
		}
		if !atomic {
			first = nil
		}
		return out, first
	})
}

// opResult converts one wire result.
func opResult(op zkproto.OpCode, r zkproto.MultiResult) OpResult {
	res := OpResult{Op: op}
	switch b := r.Resp.(type) {
	case *zkproto.CreateResponse:
		res.Path = b.Path
	case *zkproto.Create2Response:
		res.Path, res.Stat = b.Path, statOf(b.Stat)
	case *zkproto.SetDataResponse:
		res.Stat = statOf(b.Stat)
	case *zkproto.GetDataResponse:
		res.Data, res.Stat = b.Data, statOf(b.Stat)
	case *zkproto.GetChildrenResponse:
		res.Children = b.Children
	}
	if r.Op == zkproto.OpError && r.Err != zkproto.OK {
		res.Err = r.Err
	}
	return res
}
