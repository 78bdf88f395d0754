package itest

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/zkpeer"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// step is one request of a differential script, sent on session 0 or 1.
type step struct {
	session int
	op      zkproto.OpCode
	req     zkproto.Record
}

// outcome is what a server answered to one step, normalized so that two
// correct servers answer identically: zxids, times and session ids are
// replaced by placeholders.
type outcome struct {
	Err    zkproto.Code
	Body   string
	Events []string
}

// differentialScript exercises every opcode, node kind and error path that
// both servers support with their default configuration.
func differentialScript() []step {
	open := zkproto.OpenACLUnsafe
	mk := func(path string, data string, flags int32) *zkproto.CreateRequest {
		return &zkproto.CreateRequest{Path: path, Data: []byte(data), ACL: open, Flags: flags}
	}
	return []step{
		{0, zkproto.OpCreate, mk("/d", "root", 0)},
		{0, zkproto.OpCreate, mk("/d", "again", 0)},
		{0, zkproto.OpCreate2, mk("/d/a", "a", 0)},
		{0, zkproto.OpCreate, mk("/d/missing/x", "", 0)},
		{0, zkproto.OpCreate, mk("/d/seq-", "", zkproto.ModePersistentSequential)},
		{0, zkproto.OpCreate2, mk("/d/seq-", "", zkproto.ModePersistentSequential)},
		{1, zkproto.OpCreate2, mk("/d/eph", "e", zkproto.ModeEphemeral)},
		{1, zkproto.OpCreate, mk("/d/eph/child", "", 0)},
		{1, zkproto.OpCreate2, mk("/d/eseq-", "", zkproto.ModeEphemeralSequential)},
		{0, zkproto.OpCreateContainer, mk("/d/cont", "", zkproto.ModeContainer)},
		{0, zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{Path: "/d/ttl", ACL: open, Flags: zkproto.ModePersistentWithTTL, TTL: 1000}},
		{0, zkproto.OpCreate, mk("bad-path", "", 0)},
		{0, zkproto.OpCreate, mk("/d/bad//path", "", 0)},
		{0, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/d/noacl", ACL: []zkproto.ACL{}}},
		{0, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/d/badacl", ACL: []zkproto.ACL{{Perms: 31, ID: zkproto.Id{Scheme: "nope", ID: "x"}}}}},
		{0, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/d/a", Watch: true}},
		{0, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/d/none", Watch: true}},
		{0, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/d", Watch: true}},
		{0, zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: "/d", Watch: true}},
		{1, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/d", Data: []byte("v1"), Version: 0}},
		{1, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/d", Data: []byte("v2"), Version: 0}},
		{1, zkproto.OpCreate, mk("/d/none", "", 0)},
		{0, zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: "/d"}},
		{0, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: "/d"}},
		{1, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: "/d"}},
		{0, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: "/"}},
		{0, zkproto.OpGetACL, &zkproto.GetACLRequest{Path: "/d/a"}},
		{0, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/d/a", ACL: zkproto.ReadACLUnsafe, Version: 0}},
		{0, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/d/a", ACL: open, Version: -1}},
		{0, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/d/a", Data: []byte("x"), Version: -1}},
		{0, zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/d", Version: -1}},
		{0, zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/d/seq-0000000003", Version: 5}},
		{0, zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/d/seq-0000000003", Version: 0}},
		{0, zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/d/seq-0000000003", Version: -1}},
		{0, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpCreate, Req: mk("/d/m1", "1", 0)},
			{Op: zkproto.OpCheck, Req: &zkproto.CheckVersionRequest{Path: "/d", Version: 1}},
			{Op: zkproto.OpSetData, Req: &zkproto.SetDataRequest{Path: "/d/m1", Data: []byte("2"), Version: 0}},
			{Op: zkproto.OpCreate2, Req: mk("/d/m2", "", 0)},
			{Op: zkproto.OpDelete, Req: &zkproto.DeleteRequest{Path: "/d/m2", Version: -1}},
		}}},
		{0, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpCreate, Req: mk("/d/m3", "", 0)},
			{Op: zkproto.OpCheck, Req: &zkproto.CheckVersionRequest{Path: "/d", Version: 99}},
			{Op: zkproto.OpDelete, Req: &zkproto.DeleteRequest{Path: "/d/m1", Version: -1}},
		}}},
		{0, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/d/m3"}},
		{0, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpCreateContainer, Req: mk("/d/mc", "", zkproto.ModeContainer)},
			{Op: zkproto.OpCreate2, Req: mk("/d/mc/x", "", zkproto.ModeEphemeral)},
		}}},
		{0, zkproto.OpMultiRead, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpGetData, Req: &zkproto.GetDataRequest{Path: "/d/m1"}},
			{Op: zkproto.OpGetChildren, Req: &zkproto.GetChildrenRequest{Path: "/d/none-here"}},
			{Op: zkproto.OpGetChildren, Req: &zkproto.GetChildrenRequest{Path: "/d"}},
		}}},
		{0, zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: "/d/pw", Mode: zkproto.AddWatchPersistent}},
		{0, zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: "/d/rw", Mode: zkproto.AddWatchPersistentRecursive}},
		{1, zkproto.OpCreate, mk("/d/pw", "", 0)},
		{1, zkproto.OpCreate, mk("/d/rw", "", 0)},
		{1, zkproto.OpCreate, mk("/d/rw/deep", "", 0)},
		{1, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/d/rw/deep", Data: []byte("z"), Version: -1}},
		{0, zkproto.OpCheckWatches, &zkproto.CheckWatchesRequest{Path: "/d/pw", Type: zkproto.WatcherAny}},
		{0, zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: "/d/pw", Type: zkproto.WatcherAny}},
		{0, zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: "/d/pw", Type: zkproto.WatcherAny}},
		{0, zkproto.OpCheckWatches, &zkproto.CheckWatchesRequest{Path: "/d/nothing", Type: zkproto.WatcherData}},
		{0, zkproto.OpSync, &zkproto.SyncRequest{Path: "/d"}},
		{0, zkproto.OpWhoAmI, nil},
		{0, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("u:p")}},
		{0, zkproto.OpWhoAmI, nil},
		{0, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/d/mine", ACL: zkproto.CreatorAllACL}},
		{0, zkproto.OpGetACL, &zkproto.GetACLRequest{Path: "/d/mine"}},
		{1, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/d/mine"}},
		{1, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/d/theirs", ACL: zkproto.CreatorAllACL}},
		// Events are filtered by READ on the node: session 1 watches a node,
		// loses READ on it, and is not told of the change.
		{0, zkproto.OpCreate, mk("/d/filtered", "", 0)},
		{1, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/d/filtered", Watch: true}},
		{0, zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/d/filtered", ACL: zkproto.CreatorAllACL, Version: -1}},
		{0, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/d/filtered", Data: []byte("secret"), Version: -1}},
		{0, zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/d/filtered", Version: -1}},
		{1, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/zookeeper"}},
		{1, zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: "/zookeeper"}},
		{1, zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/zookeeper", Version: -1}},
		{1, zkproto.OpReconfig, &zkproto.ReconfigRequest{CurConfigID: -1}},
		{1, zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/d/eph", Version: -1}},
	}
}

// responseFor returns the record a successful reply to op carries.
func responseFor(op zkproto.OpCode) zkproto.Record {
	switch op {
	case zkproto.OpCreate:
		return &zkproto.CreateResponse{}
	case zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL:
		return &zkproto.Create2Response{}
	case zkproto.OpExists:
		return &zkproto.ExistsResponse{}
	case zkproto.OpGetData:
		return &zkproto.GetDataResponse{}
	case zkproto.OpSetData:
		return &zkproto.SetDataResponse{}
	case zkproto.OpGetACL:
		return &zkproto.GetACLResponse{}
	case zkproto.OpSetACL:
		return &zkproto.SetACLResponse{}
	case zkproto.OpGetChildren:
		return &zkproto.GetChildrenResponse{}
	case zkproto.OpGetChildren2:
		return &zkproto.GetChildren2Response{}
	case zkproto.OpSync:
		return &zkproto.SyncResponse{}
	case zkproto.OpGetAllChildrenNumber:
		return &zkproto.GetAllChildrenNumberResponse{}
	case zkproto.OpGetEphemerals:
		return &zkproto.GetEphemeralsResponse{}
	case zkproto.OpMulti, zkproto.OpMultiRead:
		return &zkproto.MultiResponse{}
	case zkproto.OpWhoAmI:
		return &zkproto.WhoAmIResponse{}
	case zkproto.OpAddWatch:
		return &zkproto.ErrorResponse{}
	}
	return nil
}

// normalize renders a reply body with zxids, times and session ids
// replaced, so that equal behaviour gives equal strings.
func normalize(v any, sessions []int64) string {
	s := fmt.Sprintf("%+v", scrub(reflect.ValueOf(v), sessions))
	return s
}

// scrub copies v with Stat time/zxid fields zeroed, ephemeral owners
// mapped to the session's index, and name lists sorted.
func scrub(v reflect.Value, sessions []int64) any {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return scrub(v.Elem(), sessions)
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return scrub(v.Elem(), sessions)
	case reflect.Struct:
		if st, ok := v.Interface().(zkproto.Stat); ok {
			st.Czxid, st.Mzxid, st.Pzxid, st.Ctime, st.Mtime = 0, 0, 0, 0, 0
			for i, s := range sessions {
				if st.EphemeralOwner == s {
					st.EphemeralOwner = int64(i + 1)
				}
			}
			return st
		}
		out := make([]string, 0, v.NumField())
		for i := 0; i < v.NumField(); i++ {
			out = append(out, fmt.Sprintf("%s:%v", v.Type().Field(i).Name, scrub(v.Field(i), sessions)))
		}
		return "{" + strings.Join(out, " ") + "}"
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return string(v.Bytes())
		}
		if v.Type().Elem().Kind() == reflect.String {
			// Children and ephemerals come in no specified order
			// (ZooKeeper's is hash order); compare them as sets.
			names := append([]string(nil), v.Interface().([]string)...)
			sort.Strings(names)
			return names
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = scrub(v.Index(i), sessions)
		}
		return out
	}
	return v.Interface()
}

// runScript plays the script against addr with two fresh sessions.
func runScript(t *testing.T, addr string) []outcome {
	t.Helper()
	var sess [2]*Raw
	for i := range sess {
		r, err := DialRaw(addr, 10000, 0, nil)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		defer r.Close()
		sess[i] = r
	}
	ids := []int64{sess[0].SessionID, sess[1].SessionID}
	var out []outcome
	for _, st := range differentialScript() {
		resp := responseFor(st.op)
		h, err := sess[st.session].Call(st.op, st.req, resp)
		if err != nil {
			t.Fatalf("%s: step %s: %v", addr, st.op, err)
		}
		o := outcome{Err: h.Err}
		if h.Err == zkproto.OK && resp != nil {
			o.Body = normalize(resp, ids)
		}
		// Give notifications caused by this step time to arrive, then
		// collect them from both sessions via a ping round trip.
		for i, r := range sess {
			if _, err := r.Call(zkproto.OpPing, nil, nil); err != nil {
				t.Fatalf("%s: ping: %v", addr, err)
			}
			for _, ev := range r.Events() {
				o.Events = append(o.Events, fmt.Sprintf("s%d:%d:%s", i, ev.Type, ev.Path))
			}
		}
		out = append(out, o)
	}
	return out
}

// TestDifferentialAgainstZooKeeper plays the same request script against a
// real ZooKeeper 3.9 and against Giraffe and requires identical answers
// (error codes, bodies and notifications; Stat fields other than zxids and
// times).
func TestDifferentialAgainstZooKeeper(t *testing.T) {
	zkAddr := startZooKeeper(t)
	p := StartStandalone(t)
	want := runScript(t, zkAddr)
	got := runScript(t, p.Addr)
	script := differentialScript()
	for i := range want {
		if !reflect.DeepEqual(want[i], got[i]) {
			t.Errorf("step %d (%s %+v):\n zookeeper: %+v\n giraffe:   %+v", i, script[i].op,
				scrub(reflect.ValueOf(script[i].req), nil), want[i], got[i])
		}
	}
}

// startZooKeeper runs a standalone Apache ZooKeeper through internal/zkpeer
// (jars fetched by `make setup-java`) and returns its address.
func startZooKeeper(t *testing.T) string {
	t.Helper()
	addr := zkpeer.Start(t, zkpeer.Options{ForceSync: true})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if r, err := DialRaw(addr, 10000, 0, nil); err == nil {
			r.Close()
			return addr
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("ZooKeeper did not accept sessions at %s", addr)
	return ""
}
