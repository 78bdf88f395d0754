package txn

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzUnmarshal checks that Unmarshal never panics and that whatever it
// accepts survives a Marshal/Unmarshal round trip unchanged. The seed corpus
// in testdata/fuzz/FuzzUnmarshal holds one encoding of every kind.
func FuzzUnmarshal(f *testing.F) {
	for _, e := range sampleEntries() {
		f.Add(e.Marshal(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Unmarshal(b)
		if err != nil {
			return
		}
		b2 := e.Marshal(nil)
		e2, err := Unmarshal(b2)
		if err != nil {
			t.Fatalf("re-encoding of an accepted entry does not decode: %v", err)
		}
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("round trip changed the entry:\n%+v\n%+v", e, e2)
		}
		if b3 := e2.Marshal(nil); !bytes.Equal(b2, b3) {
			t.Fatalf("encoding is not stable")
		}
	})
}
