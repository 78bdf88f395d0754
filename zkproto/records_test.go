package zkproto

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"
)

// sampleRecords holds one populated value of every record, for round-trip
// and truncation tests.
func sampleRecords() map[string]Record {
	st := Stat{Czxid: 1, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: 6, Aversion: 7,
		EphemeralOwner: 8, DataLength: 9, NumChildren: 10, Pzxid: 11}
	acl := []ACL{{Perms: PermAll, ID: AnyoneID}, {Perms: PermRead, ID: Id{Scheme: "ip", ID: "10.0.0.0/8"}}}
	return map[string]Record{
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
		"WhoAmI":        &WhoAmIResponse{ClientInfo: []ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}}},
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
		}},
		"MultiResponse": &MultiResponse{Results: []MultiResult{
			{Op: OpCreate, Resp: &CreateResponse{Path: "/m"}},
			{Op: OpCreate2, Resp: &Create2Response{Path: "/n", Stat: st}},
			{Op: OpCheck},
			{Op: OpSetData, Resp: &SetDataResponse{Stat: st}},
			{Op: OpError, Err: ErrNoNode, Resp: &ErrorResponse{Err: ErrNoNode}},
		}},
	}
}

func encode(r Record) []byte {
	e := NewEncoder(nil)
	r.Encode(e)
	return e.Bytes()
}

func TestRecordsRoundTrip(t *testing.T) {
	for name, r := range sampleRecords() {
		b := encode(r)
		got := reflect.New(reflect.TypeOf(r).Elem()).Interface().(Record)
		d := NewDecoder(b)
		if err := got.Decode(d); err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		if d.Remaining() != 0 {
			t.Errorf("%s: %d bytes left over", name, d.Remaining())
		}
		if !reflect.DeepEqual(r, got) {
			t.Errorf("%s: round trip\n got  %+v\n want %+v", name, got, r)
		}
	}
}

// TestRecordsTruncated decodes every proper prefix of every record: each
// must fail cleanly, never panic, never succeed.
func TestRecordsTruncated(t *testing.T) {
	for name, r := range sampleRecords() {
		b := encode(r)
		for n := 0; n < len(b); n++ {
			got := reflect.New(reflect.TypeOf(r).Elem()).Interface().(Record)
			err := got.Decode(NewDecoder(b[:n]))
			optionalTail := (name == "ConnectRequest" || name == "ConnectResponse") && n == len(b)-1
			if err == nil && !optionalTail {
				t.Errorf("%s: prefix of %d/%d bytes decoded without error", name, n, len(b))
			}
		}
	}
}

func TestStatIs68Bytes(t *testing.T) {
	if n := len(encode(&Stat{})); n != 68 {
		t.Fatalf("Stat encodes to %d bytes, want 68", n)
	}
}

func TestGoldenBytes(t *testing.T) {
	cases := []struct {
		name string
		rec  Record
		hex  string
	}{
		{"ConnectRequest with readOnly", &ConnectRequest{LastZxidSeen: 0x102, TimeOut: 30000, SessionID: 0,
			Passwd: make([]byte, 16), HasReadOnly: true},
			"00000000" + "0000000000000102" + "00007530" + "0000000000000000" + "00000010" + "00000000000000000000000000000000" + "00"},
		{"ConnectRequest without readOnly (old client)", &ConnectRequest{TimeOut: 4000, SessionID: 0x1234, Passwd: []byte{}},
			"00000000" + "0000000000000000" + "00000fa0" + "0000000000001234" + "00000000"},
		{"RequestHeader", &RequestHeader{Xid: 1, Op: OpCreate}, "00000001" + "00000001"},
		{"ReplyHeader ping", &ReplyHeader{Xid: XidPing, Zxid: 5, Err: OK}, "fffffffe" + "0000000000000005" + "00000000"},
		{"ReplyHeader error", &ReplyHeader{Xid: 3, Zxid: 9, Err: ErrNodeExists}, "00000003" + "0000000000000009" + "ffffff92"},
		{"null buffer", &GetDataResponse{Data: nil}, "ffffffff" + hexZeros(68)},
		{"multi: check then terminator", &MultiRequest{Ops: []MultiOp{{Op: OpCheck, Req: &CheckVersionRequest{Path: "/a", Version: 1}}}},
			"0000000d" + "00" + "ffffffff" + "00000002" + "2f61" + "00000001" + "ffffffff" + "01" + "ffffffff"},
		{"multi response: error result", &MultiResponse{Results: []MultiResult{{Op: OpError, Err: ErrNoNode, Resp: &ErrorResponse{Err: ErrNoNode}}}},
			"ffffffff" + "00" + "ffffff9b" + "ffffff9b" + "ffffffff" + "01" + "ffffffff"},
	}
	for _, c := range cases {
		got := hex.EncodeToString(encode(c.rec))
		if got != c.hex {
			t.Errorf("%s:\n got  %s\n want %s", c.name, got, c.hex)
		}
	}
}

func hexZeros(n int) string { return hex.EncodeToString(make([]byte, n)) }

func TestDecodeRequestRejects(t *testing.T) {
	if _, err := DecodeRequest(OpCode(77), NewDecoder(nil)); err == nil {
		t.Error("unknown opcode decoded")
	}
	read := encode(&MultiRequest{Ops: []MultiOp{{Op: OpGetData, Req: &GetDataRequest{Path: "/a"}}}})
	if _, err := DecodeRequest(OpMulti, NewDecoder(read)); err == nil {
		t.Error("a write multi with a read op decoded")
	}
	if _, err := DecodeRequest(OpMultiRead, NewDecoder(read)); err != nil {
		t.Errorf("multiRead: %v", err)
	}
	write := encode(&MultiRequest{Ops: []MultiOp{{Op: OpDelete, Req: &DeleteRequest{Path: "/a"}}}})
	if _, err := DecodeRequest(OpMultiRead, NewDecoder(write)); err == nil {
		t.Error("a multiRead with a write op decoded")
	}
	// A multi header naming an op that may not appear in a multi.
	bad := encode(&MultiHeader{Type: OpSync})
	if _, err := DecodeRequest(OpMulti, NewDecoder(bad)); err == nil {
		t.Error("multi with a sync op decoded")
	}
	// A vector claiming more elements than the bytes can hold.
	huge := NewEncoder(nil)
	huge.String("/a")
	huge.Buffer(nil)
	huge.Int(1 << 30)
	if _, err := DecodeRequest(OpCreate, NewDecoder(huge.Bytes())); err == nil {
		t.Error("create with a huge ACL count decoded")
	}
}

func TestValidatePath(t *testing.T) {
	valid := []string{"/", "/a", "/a/b", "/a.b", "/.a", "/a..", "/..a", "/a/...", "/\u00e9t\u00e9", "/zookeeper/quota"}
	invalid := []string{"", "a", "/a/", "//", "/a//b", "/.", "/..", "/a/.", "/a/..", "/a/./b", "/a/../b",
		"/a\x00b", "/a\x01", "/a\u007f", "/a\u0085", "/a\ud7ff\u00e0\uf8ff", "/\ufff0", "/\U0001F600", "/a\xff"}
	for _, p := range valid {
		if err := ValidatePath(p, false); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range invalid {
		if err := ValidatePath(p, false); err == nil {
			t.Errorf("ValidatePath(%q) = nil, want an error", p)
		}
	}
	// Sequential creates may end in "/" (the suffix follows) and so may the
	// root ("/" + suffix).
	for _, p := range []string{"/a/", "/"} {
		if err := ValidatePath(p, true); err != nil {
			t.Errorf("ValidatePath(%q, sequential) = %v", p, err)
		}
	}
	if err := ValidatePath("/a//", true); err == nil {
		t.Error("ValidatePath(/a//, sequential) accepted an empty segment")
	}
}

func TestParentAndBase(t *testing.T) {
	for _, c := range [][3]string{{"/", "/", ""}, {"/a", "/", "a"}, {"/a/b", "/a", "b"}} {
		if p, b := ParentPath(c[0]), BaseName(c[0]); p != c[1] || b != c[2] {
			t.Errorf("%q: parent %q base %q, want %q %q", c[0], p, b, c[1], c[2])
		}
	}
}
