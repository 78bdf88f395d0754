package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/members"
)

// admin is an admin port answering changes with fn; it counts requests.
type admin struct {
	*httptest.Server
	calls atomic.Int32
}

func newAdmin(t *testing.T, fn func(w http.ResponseWriter, r *http.Request)) *admin {
	a := &admin{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.calls.Add(1)
		fn(w, r)
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *admin) addr() string { return strings.TrimPrefix(a.URL, "http://") }

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestJoinFollowsTheLeader(t *testing.T) {
	var got JoinRequest
	leader := newAdmin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != PathJoin {
			http.Error(w, "wrong request", http.StatusBadRequest)
			return
		}
		json.NewDecoder(r.Body).Decode(&got)
		reply(w, http.StatusOK, Membership{ID: 10, Leader: 1, Groups: [][]members.ID{{1, 10}}})
	})
	follower := newAdmin(t, func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusMisdirectedRequest, NotLeader{Error: "not the leader", LeaderAdmin: leader.addr()})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := JoinRequest{Member: members.Member{Peer: "h:3010", Client: "h:2190", Admin: "h:7010"}, Prepare: true}
	m, err := Client{}.Join(ctx, []string{deadAddr(t), follower.addr()}, req)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != 10 || !reflect.DeepEqual(m.Groups, [][]members.ID{{1, 10}}) {
		t.Errorf("answer %+v", m)
	}
	if got != req {
		t.Errorf("the leader got %+v, want %+v", got, req)
	}
	if follower.calls.Load() != 1 || leader.calls.Load() != 1 {
		t.Errorf("follower asked %d times, leader %d; want once each", follower.calls.Load(), leader.calls.Load())
	}
}

func TestRefusalEndsUnavailableRetries(t *testing.T) {
	refuse := newAdmin(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "server 3 is not a member", http.StatusConflict)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := (Client{}).Leave(ctx, []string{refuse.addr()}, 3); err == nil || !strings.Contains(err.Error(), "not a member") {
		t.Fatalf("refused leave: %v", err)
	}
	if n := refuse.calls.Load(); n != 1 {
		t.Errorf("asked %d times after a refusal", n)
	}

	// No leader at first: asked again until it answers.
	var busy *admin
	busy = newAdmin(t, func(w http.ResponseWriter, r *http.Request) {
		if busy.calls.Load() < 3 {
			http.Error(w, "no leader yet", http.StatusServiceUnavailable)
			return
		}
		reply(w, http.StatusOK, Membership{ID: 1, Leader: 1})
	})
	m, err := Client{}.Leave(ctx, []string{busy.addr()}, 3)
	if err != nil || m.Leader != 1 {
		t.Fatalf("leave after two unavailable answers: %+v %v", m, err)
	}
	if n := busy.calls.Load(); n != 3 {
		t.Errorf("asked %d times, want 3", n)
	}
}

func TestGetAndFault(t *testing.T) {
	a := newAdmin(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == PathMembership:
			reply(w, http.StatusOK, Membership{ID: 2, Leader: 1, Forest: "+1 +2"})
		case r.Method == http.MethodPost && r.URL.Path == PathFaults:
			var b strings.Builder
			buf := make([]byte, 64)
			n, _ := r.Body.Read(buf)
			b.Write(buf[:n])
			if b.String() == "bad" {
				http.Error(w, "bad fault spec", http.StatusBadRequest)
				return
			}
			w.Write([]byte(b.String() + "\n"))
		default:
			http.NotFound(w, r)
		}
	})
	ctx := context.Background()
	m, err := Client{}.Get(ctx, a.addr())
	if err != nil || m.ID != 2 || m.Forest != "+1 +2" {
		t.Fatalf("Get: %+v %v", m, err)
	}
	if now, err := (Client{}).Fault(ctx, a.addr(), "isolate"); err != nil || now != "isolate" {
		t.Fatalf("Fault: %q %v", now, err)
	}
	if _, err := (Client{}).Fault(ctx, a.addr(), "bad"); err == nil || err.Error() != "bad fault spec" {
		t.Fatalf("bad Fault: %v", err)
	}
}

// TestTokenIsPresented: every request carries the client's token as a
// bearer token, also after a redirect to the leader; a refused token
// ends the change at once instead of being retried.
func TestTokenIsPresented(t *testing.T) {
	const token = "s3cret"
	var seen []string
	var mu sync.Mutex
	auth := func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if err := CheckToken(r, token); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return false
		}
		return true
	}
	leader := newAdmin(t, func(w http.ResponseWriter, r *http.Request) {
		if auth(w, r) {
			reply(w, http.StatusOK, Membership{ID: 1, Leader: 1})
		}
	})
	follower := newAdmin(t, func(w http.ResponseWriter, r *http.Request) {
		if auth(w, r) {
			reply(w, http.StatusMisdirectedRequest, NotLeader{Error: "not the leader", LeaderAdmin: leader.addr()})
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := (Client{Token: token}).Leave(ctx, []string{follower.addr()}, 3); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, []string{"Bearer " + token, "Bearer " + token}) {
		t.Errorf("Authorization headers %q", seen)
	}
	for _, c := range []Client{{}, {Token: "wrong"}} {
		before := follower.calls.Load()
		_, err := c.Leave(ctx, []string{follower.addr()}, 3)
		if !errors.Is(err, ErrUnauthorized) {
			t.Errorf("token %q: %v, want ErrUnauthorized", c.Token, err)
		}
		if n := follower.calls.Load() - before; n != 1 {
			t.Errorf("token %q: asked %d times after a 401", c.Token, n)
		}
		if _, err := c.Fault(ctx, follower.addr(), "heal"); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("token %q: Fault: %v, want ErrUnauthorized", c.Token, err)
		}
	}
}

func TestCheckToken(t *testing.T) {
	for _, tc := range []struct {
		header, err string
	}{
		{"Bearer abc", ""},
		{"bearer abc", ""},
		{"Bearer  abc ", ""},
		{"", "no token"},
		{"Basic YWJjOmFiYw==", "not a bearer token"},
		{"Bearer", "not a bearer token"},
		{"Bearer abd", "wrong token"},
		{"Bearer ab", "wrong token"},
		{"Bearer abcd", "wrong token"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/leave", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		err := CheckToken(r, "abc")
		if got := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && got != tc.err) {
			t.Errorf("%q: %v, want %q", tc.header, err, tc.err)
		}
	}
}

// TestTokenFile: a written token reads back; a token file that group or
// others can read, an empty one, one holding several words and a missing
// one are refused with an error naming the file and the fault.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.token")
	tok, err := WriteTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, %v; want 0600", st.Mode(), err)
	}
	if len(tok) != 64 {
		t.Errorf("token %q: want 32 bytes in hex", tok)
	}
	if got, err := ReadTokenFile(path); err != nil || got != tok {
		t.Fatalf("ReadTokenFile = %q, %v; want %q", got, err, tok)
	}
	if tok2, _ := WriteTokenFile(path); tok2 == tok {
		t.Error("two tokens written are equal")
	}
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		path, want string
	}{
		{write("group", "abc\n", 0o640), "accessible by group or others (mode 0640)"},
		{write("others", "abc\n", 0o604), "accessible by group or others (mode 0604)"},
		{write("world", "abc\n", 0o666), "chmod 600"},
		{write("empty", "", 0o600), "is empty"},
		{write("blank", " \n\t\n", 0o600), "is empty"},
		{write("words", "abc def\n", 0o600), "one word"},
		{filepath.Join(dir, "missing"), "no such file"},
		{dir, "not a regular file"},
	} {
		if _, err := ReadTokenFile(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", filepath.Base(tc.path), err, tc.want)
		}
	}
	if got, err := ReadTokenFile(write("spaces", "  xyz \n", 0o400)); err != nil || got != "xyz" {
		t.Errorf("surrounding white space: %q, %v", got, err)
	}
}

func TestJoinRecord(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := LoadJoinRecord(dir); ok || err != nil {
		t.Fatalf("empty directory: ok %v, err %v", ok, err)
	}
	r := JoinRecord{Membership: Membership{ID: 10, Leader: 1, Members: []MemberStatus{{Member: members.Member{ID: 10, Peer: "h:3010"}, Group: 0}},
		Groups: [][]members.ID{{1, 10}}, Forest: "+1 +10", Trees: 1, Children: 3, Classic: true,
		TickMs: 25, ElectionTicks: 8, Cluster: "giraffe-1"}, Pending: true}
	if err := SaveJoinRecord(dir, r); err != nil {
		t.Fatal(err)
	}
	got, ok, err := LoadJoinRecord(dir)
	if !ok || err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("LoadJoinRecord = %+v, %v, %v; want %+v", got, ok, err, r)
	}
}

// TestJoinRecordFormat pins the file's JSON: servers that joined keep
// their record across upgrades.
func TestJoinRecordFormat(t *testing.T) {
	raw := `{"id":10,"leader":1,"members":[{"id":1,"peer":"h:3001","admin":"h:7001","group":0},` +
		`{"id":10,"peer":"h:3010","client":"h:2190","group":0}],"groups":[[1,10]],"forest":"+1 +10",` +
		`"trees":3,"children":3,"classic":true,"tick_ms":25,"election_ticks":8,"cluster":"giraffe-1","pending":true}`
	var r JoinRecord
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatal(err)
	}
	want := JoinRecord{Membership: Membership{ID: 10, Leader: 1, Members: []MemberStatus{
		{Member: members.Member{ID: 1, Peer: "h:3001", Admin: "h:7001"}, Group: 0},
		{Member: members.Member{ID: 10, Peer: "h:3010", Client: "h:2190"}, Group: 0}},
		Groups: [][]members.ID{{1, 10}}, Forest: "+1 +10", Trees: 3, Children: 3, Classic: true,
		TickMs: 25, ElectionTicks: 8, Cluster: "giraffe-1"}, Pending: true}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("decoded %+v\nwant %+v", r, want)
	}
	if s := r.Shape(); s != (members.Shape{Nodes: 2, Trees: 3, Children: 3, Classic: true}) {
		t.Errorf("shape %+v", s)
	}
}
