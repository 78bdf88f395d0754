package txn

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// A Result travels when a weak write is answered before it is applied:
// the leader computes it on its speculative state and sends it to the
// server the client is connected to, which later compares it with the
// result the committed entry gives. The encoding is canonical, so equal
// results have equal encodings.

// resultMinBytes is the smallest encoded result: the code, an empty path,
// the stat and a null multi count.
const resultMinBytes = 4 + 4 + 68 + 4

// MarshalResult appends the encoding of r to buf and returns the extended
// slice: the code, the path and the stat in jute's encoding, then the
// results of a multi (-1 for none), each encoded the same way.
func MarshalResult(buf []byte, r *Result) []byte {
	enc := zkproto.NewEncoder(buf)
	marshalResult(enc, r)
	return enc.Bytes()
}

func marshalResult(enc *zkproto.Encoder, r *Result) {
	enc.Int(int32(r.Err))
	enc.String(r.Path)
	r.Stat.Encode(enc)
	if r.Multi == nil {
		enc.Int(-1)
		return
	}
	enc.Int(int32(len(r.Multi)))
	for i := range r.Multi {
		marshalResult(enc, &r.Multi[i])
	}
}

// UnmarshalResult decodes a result encoded by MarshalResult. It rejects
// truncated or trailing bytes, counts the input cannot hold and results
// nested deeper than MaxNesting, and never panics.
func UnmarshalResult(b []byte) (Result, error) {
	d := zkproto.NewDecoder(b)
	var r Result
	if err := unmarshalResult(d, &r, 0); err != nil {
		return Result{}, err
	}
	if d.Remaining() != 0 {
		return Result{}, fmt.Errorf("%w: %d trailing bytes after a result", ErrMalformed, d.Remaining())
	}
	return r, nil
}

func unmarshalResult(d *zkproto.Decoder, r *Result, depth int) error {
	r.Err = zkproto.Code(d.Int())
	r.Path = d.String()
	_ = r.Stat.Decode(d)
	n, ok := d.VectorLen(resultMinBytes)
	if err := d.Err(); err != nil {
		return fmt.Errorf("%w: result: %v", ErrMalformed, err)
	}
	if !ok {
		return nil
	}
	if depth >= MaxNesting {
		return fmt.Errorf("%w: results nested deeper than %d", ErrMalformed, MaxNesting)
	}
	r.Multi = make([]Result, n)
	for i := range r.Multi {
		if err := unmarshalResult(d, &r.Multi[i], depth+1); err != nil {
			return err
		}
	}
	return nil
}
