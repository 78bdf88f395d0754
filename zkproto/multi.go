package zkproto

import "fmt"

// A multi request is a list of (MultiHeader, op record) pairs closed by the
// terminator header {-1, true, -1}; its response is a list of (MultiHeader,
// result record) pairs closed the same way (MultiOperationRecord.java,
// MultiResponse.java). The list has no count, so each decoder below is
// bounded by its input: every element costs at least its 9-byte header, so
// a frame of n bytes holds at most n/9 ops, and nothing is allocated ahead
// of the bytes that justify it.

// MultiHeader precedes each op of a multi request and each result of a
// multi response; a header with Done set ends the list.
type MultiHeader struct {
	Type OpCode // the op (or OpError for a failed op's result) that follows
	Done bool   // the list ends here
	Err  Code   // a result's error code; -1 in requests
}

// Encode writes h.
func (h *MultiHeader) Encode(e *Encoder) { e.Int(int32(h.Type)); e.Bool(h.Done); e.Int(int32(h.Err)) }

// Decode reads h.
func (h *MultiHeader) Decode(d *Decoder) error {
	h.Type = OpCode(d.Int())
	h.Done = d.Bool()
	h.Err = Code(d.Int())
	return d.Err()
}

// multiEnd is the terminator ZooKeeper writes after the last op or result.
var multiEnd = MultiHeader{Type: -1, Done: true, Err: -1}

// MultiOp is one op of a multi or multiRead request. Req is a
// *CreateRequest (create, create2, createContainer), *CreateTTLRequest,
// *DeleteRequest, *SetDataRequest or *CheckVersionRequest in a multi, and a
// *GetDataRequest or *GetChildrenRequest in a multiRead.
type MultiOp struct {
	Op  OpCode // which operation
	Req Record // its request body
}

// MultiRequest is the body of multi and multiRead. Every op must be of the
// same kind (all writes or all reads), as MultiOperationRecord requires.
type MultiRequest struct {
	Ops []MultiOp // in the order they apply
}

// Encode writes r with its terminator. Each op is written with the header
// {Op, false, -1}. An op whose Req is nil is written with the zero record
// of its type, so the frame stays well formed.
func (r *MultiRequest) Encode(e *Encoder) {
	for i := range r.Ops {
		op := &r.Ops[i]
		h := MultiHeader{Type: op.Op, Err: -1}
		h.Encode(e)
		req := op.Req
		if req == nil {
			req = newMultiOpRequest(op.Op)
		}
		if req != nil {
			req.Encode(e)
		}
	}
	multiEnd.Encode(e)
}

// Decode reads r up to and including its terminator. An op type that may
// not appear in a multi, or a mix of reads and writes, is an error (what
// MultiOperationRecord.deserialize rejects with an IOException).
func (r *MultiRequest) Decode(d *Decoder) error {
	var ops []MultiOp
	r.Ops = nil
	var kind opKind
	for {
		var h MultiHeader
		if h.Decode(d) != nil {
			return d.Err()
		}
		if h.Done {
			r.Ops = ops
			return nil
		}
		req := newMultiOpRequest(h.Type)
		if req == nil {
			d.Fail(fmt.Errorf("zkproto: op %s is not allowed in a multi", h.Type))
			return d.Err()
		}
		k := kindOf(h.Type)
		if kind == kindNone {
			kind = k
		} else if k != kind {
			d.Fail(fmt.Errorf("zkproto: multi mixes read and write ops (%s)", h.Type))
			return d.Err()
		}
		if req.Decode(d) != nil {
			return d.Err()
		}
		ops = append(ops, MultiOp{Op: h.Type, Req: req})
	}
}

// opKind is Op.OpKind: a multi is all transactions or all reads.
type opKind uint8

const (
	kindNone opKind = iota
	kindWrite
	kindRead
)

// kindOf returns the kind of an op allowed in a multi.
func kindOf(op OpCode) opKind {
	if op == OpGetData || op == OpGetChildren {
		return kindRead
	}
	return kindWrite
}

// IsRead reports whether r holds read ops, so that a client sends it as
// multiRead rather than multi. Decode guarantees all ops share one kind.
func (r *MultiRequest) IsRead() bool {
	return len(r.Ops) > 0 && kindOf(r.Ops[0].Op) == kindRead
}

// newMultiOpRequest returns an empty request record for an op allowed in a
// multi, or nil.
func newMultiOpRequest(op OpCode) Record {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}
	case OpCreateTTL:
		return &CreateTTLRequest{}
	case OpDelete:
		return &DeleteRequest{}
	case OpSetData:
		return &SetDataRequest{}
	case OpCheck:
		return &CheckVersionRequest{}
	case OpGetData:
		return &GetDataRequest{}
	case OpGetChildren:
		return &GetChildrenRequest{}
	}
	return nil
}

// MultiResult is one result of a multi or multiRead response.
//
// For a successful op, Op is its type and Resp its result: *CreateResponse
// for create; *Create2Response for create2, createTTL and createContainer;
// nil for delete and check; *SetDataResponse for setData;
// *GetDataResponse and *GetChildrenResponse in a multiRead. For a failed op
// Op is OpError, Err its code and Resp an *ErrorResponse (Err is what is
// encoded; Resp may be nil).
type MultiResult struct {
	Op   OpCode // the op's code, OpError when it failed
	Err  Code   // OK, or the op's error
	Resp Record // the op's reply body, if it has one
}

// MultiResponse answers multi and multiRead.
type MultiResponse struct {
	Results []MultiResult // one per op, in the request's order
}

// Encode writes r with its terminator, in the form ZooKeeper's clients
// accept: createTTL and createContainer results go out as create2 (as
// FinalRequestProcessor builds them; MultiResponse.deserialize knows no
// other create type), the header's err is 0 except for an error result,
// and a result whose Resp is nil is written with the zero record of its
// type so the frame stays well formed.
func (r *MultiResponse) Encode(e *Encoder) {
	for i := range r.Results {
		res := &r.Results[i]
		typ := res.Op
		if typ == OpCreateTTL || typ == OpCreateContainer {
			typ = OpCreate2
		}
		if typ == OpError {
			h := MultiHeader{Type: OpError, Err: res.Err}
			h.Encode(e)
			e.Int(int32(res.Err)) // ErrorResponse
			continue
		}
		h := MultiHeader{Type: typ}
		h.Encode(e)
		resp := res.Resp
		if resp == nil {
			resp, _ = newMultiResult(typ)
		}
		if resp != nil {
			resp.Encode(e)
		}
	}
	multiEnd.Encode(e)
}

// newMultiResult returns an empty result record for a result type (nil for
// delete and check, whose results have no body) and ok=false for a type
// MultiResponse.deserialize rejects.
func newMultiResult(op OpCode) (rec Record, ok bool) {
	switch op {
	case OpCreate:
		return &CreateResponse{}, true
	case OpCreate2:
		return &Create2Response{}, true
	case OpDelete, OpCheck:
		return nil, true
	case OpSetData:
		return &SetDataResponse{}, true
	case OpGetData:
		return &GetDataResponse{}, true
	case OpGetChildren:
		return &GetChildrenResponse{}, true
	case OpError:
		return &ErrorResponse{}, true
	}
	return nil, false
}

// Decode reads r up to and including its terminator. Result types other
// than those MultiResponse.deserialize accepts are an error. The header's
// err is ignored, as in ZooKeeper: an error result's code is the one in its
// ErrorResponse.
func (r *MultiResponse) Decode(d *Decoder) error {
	var results []MultiResult
	r.Results = nil
	for {
		var h MultiHeader
		if h.Decode(d) != nil {
			return d.Err()
		}
		if h.Done {
			r.Results = results
			return nil
		}
		resp, ok := newMultiResult(h.Type)
		if !ok {
			d.Fail(fmt.Errorf("zkproto: invalid type %s in a multi response", h.Type))
			return d.Err()
		}
		res := MultiResult{Op: h.Type, Resp: resp}
		if resp != nil {
			if resp.Decode(d) != nil {
				return d.Err()
			}
			if er, isErr := resp.(*ErrorResponse); isErr {
				res.Err = er.Err
			}
		}
		results = append(results, res)
	}
}
