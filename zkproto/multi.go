package zkproto

import "fmt"

// MultiHeader precedes each op of a multi request and each result of a
// multi response; {-1, true, -1} ends the list.
type MultiHeader struct {
	Type OpCode
	Done bool
	Err  Code
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

// MultiOp is one op of a multi or multiRead request.
type MultiOp struct {
	Op  OpCode
	Req Record
}

// MultiRequest is the body of multi and multiRead.
type MultiRequest struct{ Ops []MultiOp }

// Encode writes r with its terminator.
func (r *MultiRequest) Encode(e *Encoder) {
	for _, op := range r.Ops {
		h := MultiHeader{Type: op.Op, Done: false, Err: -1}
		h.Encode(e)
		op.Req.Encode(e)
	}
	end := MultiHeader{Type: -1, Done: true, Err: -1}
	end.Encode(e)
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

// Decode reads r up to and including its terminator. An op type that may
// not appear in a multi is an error. Every op consumes at least its 9-byte
// header, so the op count is bounded by the frame size.
func (r *MultiRequest) Decode(d *Decoder) error {
	r.Ops = r.Ops[:0]
	for {
		var h MultiHeader
		if err := h.Decode(d); err != nil {
			return err
		}
		if h.Done {
			return nil
		}
		req := newMultiOpRequest(h.Type)
		if req == nil {
			d.Fail(fmt.Errorf("zkproto: op %s is not allowed in a multi", h.Type))
			return d.Err()
		}
		if err := req.Decode(d); err != nil {
			return err
		}
		r.Ops = append(r.Ops, MultiOp{Op: h.Type, Req: req})
	}
}

// MultiResult is one result of a multi response. Op is OpError for a
// failed op, with Err its code and Resp an *ErrorResponse.
type MultiResult struct {
	Op   OpCode
	Err  Code
	Resp Record
}

// MultiResponse answers multi and multiRead.
type MultiResponse struct{ Results []MultiResult }

// Encode writes r with its terminator.
func (r *MultiResponse) Encode(e *Encoder) {
	for _, res := range r.Results {
		h := MultiHeader{Type: res.Op, Done: false, Err: res.Err}
		h.Encode(e)
		if res.Resp != nil {
			res.Resp.Encode(e)
		}
	}
	end := MultiHeader{Type: -1, Done: true, Err: -1}
	end.Encode(e)
}

// newMultiResult returns an empty result record for a result type, nil for
// types whose result has no body, and ok=false for an unknown type.
func newMultiResult(op OpCode) (Record, bool) {
	switch op {
	case OpCreate:
		return &CreateResponse{}, true
	case OpCreate2, OpCreateTTL, OpCreateContainer:
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

// Decode reads r up to and including its terminator.
func (r *MultiResponse) Decode(d *Decoder) error {
	r.Results = r.Results[:0]
	for {
		var h MultiHeader
		if err := h.Decode(d); err != nil {
			return err
		}
		if h.Done {
			return nil
		}
		resp, ok := newMultiResult(h.Type)
		if !ok {
			d.Fail(fmt.Errorf("zkproto: unknown multi result type %d", int32(h.Type)))
			return d.Err()
		}
		res := MultiResult{Op: h.Type, Err: h.Err, Resp: resp}
		if resp != nil {
			if err := resp.Decode(d); err != nil {
				return err
			}
			if er, ok := resp.(*ErrorResponse); ok {
				res.Err = er.Err
			}
		}
		r.Results = append(r.Results, res)
	}
}
