package zkproto

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// testStat has a distinct value in every field, so a field written in the
// wrong place shows up.
var testStat = Stat{Czxid: 1, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: 6, Aversion: 7,
	EphemeralOwner: 8, DataLength: 9, NumChildren: 10, Pzxid: 11}

var testACL = []ACL{{Perms: PermAll, ID: AnyoneID}, {Perms: PermRead, ID: Id{Scheme: "ip", ID: "10.0.0.0/8"}}}

// sampleRecords holds a populated value of every record of the package,
// keyed by a name, for round-trip, truncation and fuzz-seed use.
func sampleRecords() map[string]Record {
	st := testStat
	acl := testACL
	return map[string]Record{
		"Stat":            &Stat{Czxid: -1, Mzxid: 1 << 40, Ctime: 1700000000000, Version: -1, Pzxid: 3},
		"Id":              &Id{Scheme: "digest", ID: "u:x"},
		"ACL":             &ACL{Perms: PermCreate | PermDelete, ID: Id{Scheme: "world", ID: "anyone"}},
		"RequestHeader":   &RequestHeader{Xid: 7, Op: OpGetData},
		"ReplyHeader":     &ReplyHeader{Xid: 7, Zxid: 0x100000002, Err: ErrNoNode},
		"ConnectRequest":  &ConnectRequest{LastZxidSeen: 5, TimeOut: 30000, SessionID: 9, Passwd: make([]byte, 16), ReadOnly: true, HasReadOnly: true},
		"ConnectResponse": &ConnectResponse{TimeOut: 30000, SessionID: 9, Passwd: bytes.Repeat([]byte{1}, 16), HasReadOnly: true},
		"CreateRequest":   &CreateRequest{Path: "/a", Data: []byte("x"), ACL: acl, Flags: ModeEphemeralSequential},
		"CreateTTL":       &CreateTTLRequest{Path: "/t", Data: []byte{}, ACL: acl, Flags: ModePersistentWithTTL, TTL: 1000},
		"CreateResponse":  &CreateResponse{Path: "/a0000000001"},
		"Create2Response": &Create2Response{Path: "/b", Stat: st},
		"DeleteRequest":   &DeleteRequest{Path: "/a", Version: -1},
		"ExistsRequest":   &ExistsRequest{Path: "/a", Watch: true},
		"ExistsResponse":  &ExistsResponse{Stat: st},
		"GetDataRequest":  &GetDataRequest{Path: "/a", Watch: true},
		"GetDataResponse": &GetDataResponse{Data: []byte("hello"), Stat: st},
		"SetDataRequest":  &SetDataRequest{Path: "/a", Data: []byte("v"), Version: 3},
		"SetDataResponse": &SetDataResponse{Stat: st},
		"GetACLRequest":   &GetACLRequest{Path: "/a"},
		"GetACLResponse":  &GetACLResponse{ACL: acl, Stat: st},
		"SetACLRequest":   &SetACLRequest{Path: "/a", ACL: acl, Version: 1},
		"SetACLResponse":  &SetACLResponse{Stat: st},
		"GetChildren":     &GetChildrenRequest{Path: "/", Watch: true},
		"GetChildrenResp": &GetChildrenResponse{Children: []string{"a", "b"}},
		"GetChildren2":    &GetChildren2Request{Path: "/"},
		"GetChildren2Rsp": &GetChildren2Response{Children: []string{"z"}, Stat: st},
		"SyncRequest":     &SyncRequest{Path: "/"},
		"SyncResponse":    &SyncResponse{Path: "/"},
		"CheckVersion":    &CheckVersionRequest{Path: "/a", Version: 2},
		"AllChildrenReq":  &GetAllChildrenNumberRequest{Path: "/"},
		"AllChildrenResp": &GetAllChildrenNumberResponse{TotalNumber: 4},
		"EphemeralsReq":   &GetEphemeralsRequest{PrefixPath: "/e"},
		"EphemeralsResp":  &GetEphemeralsResponse{Ephemerals: []string{"/e/1"}},
		"AuthPacket":      &AuthPacket{Scheme: "digest", Auth: []byte("u:p")},
		"SetWatches":      &SetWatches{RelativeZxid: 3, DataWatches: []string{"/d"}, ExistWatches: []string{}, ChildWatches: []string{"/c"}},
		"SetWatches2": &SetWatches2{RelativeZxid: 3, DataWatches: []string{"/d"}, ExistWatches: []string{"/e"},
			ChildWatches: []string{}, PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{"/r"}},
		"AddWatch":      &AddWatchRequest{Path: "/p", Mode: AddWatchPersistentRecursive},
		"CheckWatches":  &CheckWatchesRequest{Path: "/p", Type: WatcherAny},
		"RemoveWatches": &RemoveWatchesRequest{Path: "/p", Type: WatcherData},
		"ClientInfo":    &ClientInfo{AuthScheme: "digest", User: "bob"},
		"WhoAmI":        &WhoAmIResponse{ClientInfo: []ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}, {AuthScheme: "digest", User: "u"}}},
		"WatcherEvent":  &WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/a"},
		"ErrorResponse": &ErrorResponse{Err: ErrBadVersion},
		"Reconfig":      &ReconfigRequest{JoiningServers: "a", LeavingServers: "b", NewMembers: "", CurConfigID: -1},
		"SASLRequest":   &GetSASLRequest{Token: []byte{1, 2}},
		"SASLResponse":  &SetSASLResponse{Token: []byte{3}},
		"MultiHeader":   &MultiHeader{Type: OpCreate, Done: false, Err: -1},
		"MultiRequest": &MultiRequest{Ops: []MultiOp{
			{Op: OpCreate, Req: &CreateRequest{Path: "/m", Data: []byte("1"), ACL: acl}},
			{Op: OpCheck, Req: &CheckVersionRequest{Path: "/m", Version: 0}},
			{Op: OpSetData, Req: &SetDataRequest{Path: "/m", Data: []byte("2"), Version: -1}},
			{Op: OpDelete, Req: &DeleteRequest{Path: "/m", Version: -1}},
			{Op: OpCreateTTL, Req: &CreateTTLRequest{Path: "/t", ACL: acl, Flags: ModePersistentWithTTL, TTL: 5}},
			{Op: OpCreate2, Req: &CreateRequest{Path: "/c2", ACL: acl}},
			{Op: OpCreateContainer, Req: &CreateRequest{Path: "/cc", ACL: acl, Flags: ModeContainer}},
		}},
		"MultiReadRequest": &MultiRequest{Ops: []MultiOp{
			{Op: OpGetData, Req: &GetDataRequest{Path: "/m"}},
			{Op: OpGetChildren, Req: &GetChildrenRequest{Path: "/"}},
		}},
		"MultiResponse": &MultiResponse{Results: []MultiResult{
			{Op: OpCreate, Resp: &CreateResponse{Path: "/m"}},
			{Op: OpCreate2, Resp: &Create2Response{Path: "/n", Stat: st}},
			{Op: OpCheck},
			{Op: OpDelete},
			{Op: OpSetData, Resp: &SetDataResponse{Stat: st}},
			{Op: OpError, Err: ErrNoNode, Resp: &ErrorResponse{Err: ErrNoNode}},
		}},
		"MultiReadResponse": &MultiResponse{Results: []MultiResult{
			{Op: OpGetData, Resp: &GetDataResponse{Data: []byte("d"), Stat: st}},
			{Op: OpGetChildren, Resp: &GetChildrenResponse{Children: []string{"x", "y"}}},
			{Op: OpError, Err: ErrNoAuth, Resp: &ErrorResponse{Err: ErrNoAuth}},
		}},
	}
}

// sortedNames returns the keys of m in order, so failures are reported
// deterministically.
func sortedNames(m map[string]Record) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func encode(r Record) []byte {
	e := NewEncoder(nil)
	r.Encode(e)
	return e.Bytes()
}

// newLike returns a zero record of r's concrete type.
func newLike(r Record) Record {
	return reflect.New(reflect.TypeOf(r).Elem()).Interface().(Record)
}

func TestRecordsRoundTrip(t *testing.T) {
	recs := sampleRecords()
	for _, name := range sortedNames(recs) {
		r := recs[name]
		b := encode(r)
		got := newLike(r)
		d := NewDecoder(b)
		if err := got.Decode(d); err != nil {
			t.Errorf("%s: decode: %v", name, err)
			continue
		}
		if d.Remaining() != 0 {
			t.Errorf("%s: %d bytes left over", name, d.Remaining())
		}
		if !reflect.DeepEqual(r, got) {
			t.Errorf("%s: round trip\n got  %+v\n want %+v", name, got, r)
		}
		if again := encode(got); !bytes.Equal(again, b) {
			t.Errorf("%s: re-encoding differs\n got  %x\n want %x", name, again, b)
		}
	}
}

// TestZeroRecordsRoundTrip checks that every record's zero value (nil
// slices, which encode as jute's null) survives a round trip unchanged.
func TestZeroRecordsRoundTrip(t *testing.T) {
	recs := sampleRecords()
	for _, name := range sortedNames(recs) {
		zero := newLike(recs[name])
		got := newLike(zero)
		if err := got.Decode(NewDecoder(encode(zero))); err != nil {
			t.Errorf("%s: decode of zero value: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(zero, got) {
			t.Errorf("%s: zero value round trip gave %+v", name, got)
		}
	}
}

// TestRecordsTruncated decodes every proper prefix of every record: each
// must fail cleanly, never panic, never succeed. The one exception is the
// handshake without its optional trailing readOnly byte, which is the
// old-client form and must decode with HasReadOnly unset.
func TestRecordsTruncated(t *testing.T) {
	recs := sampleRecords()
	for _, name := range sortedNames(recs) {
		r := recs[name]
		b := encode(r)
		for n := 0; n < len(b); n++ {
			got := newLike(r)
			err := got.Decode(NewDecoder(b[:n]))
			if n == len(b)-1 && (name == "ConnectRequest" || name == "ConnectResponse") {
				if err != nil {
					t.Errorf("%s without readOnly: %v", name, err)
				}
				if reflect.ValueOf(got).Elem().FieldByName("HasReadOnly").Bool() {
					t.Errorf("%s without readOnly decoded with HasReadOnly", name)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s: prefix of %d/%d bytes decoded without error", name, n, len(b))
			}
		}
	}
}

// hexBytes joins hex fragments (spaces allowed) into bytes, so golden
// encodings can be written field by field.
func hexBytes(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Join(parts, ""), " ", ""))
	if err != nil {
		t.Fatalf("bad golden hex: %v", err)
	}
	return b
}

// TestGoldenRecords compares encodings with bytes built by hand from
// zookeeper.jute and BinaryOutputArchive: big-endian ints and longs, 1-byte
// booleans, length-prefixed buffers and strings, -1 for null.
func TestGoldenRecords(t *testing.T) {
	zeros16 := strings.Repeat("00", 16)
	statHex := "0000000000000001 0000000000000002 0000000000000003 0000000000000004" +
		"00000005 00000006 00000007 0000000000000008 00000009 0000000a 000000000000000b"
	cases := []struct {
		name string
		rec  Record
		hex  string
	}{
		{"ConnectRequest with readOnly",
			&ConnectRequest{LastZxidSeen: 0x102, TimeOut: 30000, Passwd: make([]byte, 16), ReadOnly: true, HasReadOnly: true},
			"00000000 0000000000000102 00007530 0000000000000000 00000010" + zeros16 + "01"},
		{"ConnectRequest without readOnly (old client)",
			&ConnectRequest{TimeOut: 4000, SessionID: 0x1234, Passwd: []byte{}},
			"00000000 0000000000000000 00000fa0 0000000000001234 00000000"},
		{"ConnectResponse with readOnly",
			&ConnectResponse{TimeOut: 30000, SessionID: 0x100, Passwd: make([]byte, 16), HasReadOnly: true},
			"00000000 00007530 0000000000000100 00000010" + zeros16 + "00"},
		{"ConnectResponse expired, old form",
			&ConnectResponse{Passwd: make([]byte, 16)},
			"00000000 00000000 0000000000000000 00000010" + zeros16},
		{"RequestHeader create", &RequestHeader{Xid: 1, Op: OpCreate}, "00000001 00000001"},
		{"RequestHeader ping", &RequestHeader{Xid: XidPing, Op: OpPing}, "fffffffe 0000000b"},
		{"RequestHeader closeSession", &RequestHeader{Xid: 9, Op: OpCloseSession}, "00000009 fffffff5"},
		{"ReplyHeader ping", &ReplyHeader{Xid: XidPing, Zxid: 5}, "fffffffe 0000000000000005 00000000"},
		{"ReplyHeader error", &ReplyHeader{Xid: 3, Zxid: 9, Err: ErrNodeExists}, "00000003 0000000000000009 ffffff92"},
		{"Stat", &testStat, statHex},
		{"GetDataResponse null data", &GetDataResponse{Data: nil, Stat: testStat}, "ffffffff" + statHex},
		{"CreateRequest open ACL",
			&CreateRequest{Path: "/a", Data: []byte("x"), ACL: OpenACLUnsafe, Flags: ModeEphemeral},
			"00000002 2f61 00000001 78 00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65 00000001"},
		{"CreateRequest null ACL", &CreateRequest{Path: "/"}, "00000001 2f ffffffff ffffffff 00000000"},
		{"CreateTTLRequest",
			&CreateTTLRequest{Path: "/t", Data: []byte{}, ACL: []ACL{}, Flags: ModePersistentWithTTL, TTL: 60000},
			"00000002 2f74 00000000 00000000 00000005 000000000000ea60"},
		{"ExistsRequest", &ExistsRequest{Path: "/a", Watch: true}, "00000002 2f61 01"},
		{"SetWatches",
			&SetWatches{RelativeZxid: 0x10, DataWatches: []string{"/d"}, ExistWatches: []string{}, ChildWatches: nil},
			"0000000000000010 00000001 00000002 2f64 00000000 ffffffff"},
		{"WatcherEvent", &WatcherEvent{Type: EventNodeCreated, State: StateSyncConnected, Path: "/w"},
			"00000001 00000003 00000002 2f77"},
		{"AuthPacket", &AuthPacket{Scheme: "digest", Auth: []byte("u:p")},
			"00000000 00000006 646967657374 00000003 753a70"},
		{"WhoAmIResponse", &WhoAmIResponse{ClientInfo: []ClientInfo{{AuthScheme: "ip", User: "1"}}},
			"00000001 00000002 6970 00000001 31"},
		{"AddWatchRequest", &AddWatchRequest{Path: "/p", Mode: AddWatchPersistentRecursive}, "00000002 2f70 00000001"},
	}
	for _, c := range cases {
		want := hexBytes(t, c.hex)
		got := encode(c.rec)
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got  %x\n want %x", c.name, got, want)
			continue
		}
		back := newLike(c.rec)
		if err := back.Decode(NewDecoder(want)); err != nil || !reflect.DeepEqual(back, c.rec) {
			t.Errorf("%s: decoding the golden bytes gave %+v, %v", c.name, back, err)
		}
	}
}

func TestStatIs68Bytes(t *testing.T) {
	if n := len(encode(&Stat{})); n != 68 {
		t.Fatalf("Stat encodes to %d bytes, want 68", n)
	}
}

// TestDecodeRejectsBadLengths covers the length prefixes jute forbids: a
// negative length other than -1 and a vector count that cannot fit.
func TestDecodeRejectsBadLengths(t *testing.T) {
	cases := []struct {
		name string
		rec  Record
		hex  string
	}{
		{"string length -2", &SyncRequest{}, "fffffffe"},
		{"buffer length -2", &GetSASLRequest{}, "fffffffe"},
		{"string longer than input", &SyncRequest{}, "00000010 2f61"},
		{"ACL count beyond input", &GetACLResponse{}, "40000000"},
		{"children count beyond input", &GetChildrenResponse{}, "00000003 00000000 00000000"},
		{"negative vector count", &GetChildrenResponse{}, "fffffffe"},
		{"whoAmI count beyond input", &WhoAmIResponse{}, "7fffffff"},
	}
	for _, c := range cases {
		if err := c.rec.Decode(NewDecoder(hexBytes(t, c.hex))); err == nil {
			t.Errorf("%s: decoded without error: %+v", c.name, c.rec)
		}
	}
}

// TestDecodeCopies checks that decoded buffers do not alias the input, so
// a record may outlive a reused frame buffer.
func TestDecodeCopies(t *testing.T) {
	in := encode(&SetDataRequest{Path: "/a", Data: []byte("abc")})
	var r SetDataRequest
	if err := r.Decode(NewDecoder(in)); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 0xff
	}
	if r.Path != "/a" || string(r.Data) != "abc" {
		t.Fatalf("decoded record changed with its input: %+v", r)
	}
}
