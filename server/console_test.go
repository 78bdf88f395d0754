package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/console"
	"github.com/giraffe-coord/giraffe/server"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// decode unmarshals a JSON answer into v.
func decode(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("%v in %q", err, body)
	}
}

// TestConsoleReadsOpenWritesNeedTheToken: on the admin port, the console's
// page and its reads answer without a token; creating, setting and
// deleting znodes need the admin token and check versions; a znode's data
// is read as an unauthenticated client may read it; the load of the last
// seconds counts the requests answered.
func TestConsoleReadsOpenWritesNeedTheToken(t *testing.T) {
	const token = "console-token-0123"
	s, log := startLogged(t, func(c *server.Config) { c.AdminTokenFile = writeToken(t, token) })
	base := "http://" + s.AdminAddr().String()

	if code, body := request(t, http.MethodGet, base+"/ui/", "", ""); code != http.StatusOK || !strings.Contains(body, "Giraffe console") {
		t.Fatalf("GET /ui/: %d\n%s", code, body)
	}
	var me console.Self
	code, body := request(t, http.MethodGet, base+console.PathSelf, "", "")
	decode(t, body, &me)
	if code != http.StatusOK || me.Role != console.RoleStandalone || !me.Serving {
		t.Fatalf("GET self: %d %+v", code, me)
	}
	// The admin plane's own endpoints still demand the token.
	if code, _ := request(t, http.MethodGet, base+"/membership", "", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /membership without the token: %d, want 401", code)
	}
	for _, tok := range []string{"", "wrong"} {
		var who console.Who
		_, body := request(t, http.MethodGet, base+console.PathWhoami, tok, "")
		if decode(t, body, &who); who.Admin {
			t.Errorf("whoami with token %q: admin", tok)
		}
	}
	var who console.Who
	_, body = request(t, http.MethodGet, base+console.PathWhoami, token, "")
	if decode(t, body, &who); !who.Admin {
		t.Errorf("whoami with the token: not admin")
	}

	create := `{"path":"/c","data":"aGVsbG8="}` // "hello"
	for _, tok := range []string{"", "wrong"} {
		if code, _ := request(t, http.MethodPost, base+console.PathZnode, tok, create); code != http.StatusUnauthorized {
			t.Errorf("create with token %q: %d, want 401", tok, code)
		}
	}
	if code, body := request(t, http.MethodPost, base+console.PathZnode, token, create); code != http.StatusOK {
		t.Fatalf("create with the token: %d %s", code, body)
	}
	if code, _ := request(t, http.MethodPost, base+console.PathZnode, token, create); code != http.StatusConflict {
		t.Errorf("create again: %d, want 409 (NODEEXISTS)", code)
	}
	var z console.Znode
	code, body = request(t, http.MethodGet, base+console.PathZnode+"?path=/c", "", "")
	if decode(t, body, &z); code != http.StatusOK || string(z.Data) != "hello" || z.Stat.Version != 0 ||
		len(z.ACL) != 1 || z.ACL[0].Scheme != "world" || z.Children == nil || !strings.Contains(body, `"children":[]`) {
		t.Fatalf("GET /c: %d %+v", code, z)
	}
	if code, _ := request(t, http.MethodPut, base+console.PathZnode, token, `{"path":"/c","data":"","version":7}`); code != http.StatusConflict {
		t.Errorf("set with a wrong version: %d, want 409 (BADVERSION)", code)
	}
	code, body = request(t, http.MethodPut, base+console.PathZnode, token, `{"path":"/c","data":"d29ybGQ=","version":0}`)
	if decode(t, body, &z); code != http.StatusOK || string(z.Data) != "world" || z.Stat.Version != 1 {
		t.Errorf("set at version 0: %d %+v", code, z)
	}
	if code, _ := request(t, http.MethodDelete, base+console.PathZnode+"?path=/c&version=1", "", ""); code != http.StatusUnauthorized {
		t.Errorf("delete without the token: %d, want 401", code)
	}
	if code, _ := request(t, http.MethodDelete, base+console.PathZnode+"?path=/c&version=0", token, ""); code != http.StatusConflict {
		t.Errorf("delete at a stale version: %d, want 409", code)
	}
	if code, body := request(t, http.MethodDelete, base+console.PathZnode+"?path=/c&version=1", token, ""); code != http.StatusOK {
		t.Errorf("delete at version 1: %d %s", code, body)
	}
	if code, _ := request(t, http.MethodGet, base+console.PathZnode+"?path=/c", "", ""); code != http.StatusNotFound {
		t.Errorf("GET of the deleted /c: %d, want 404", code)
	}

	// A znode only its owner may read: the console shows that it exists,
	// and nothing else, as to an unauthenticated client.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, []string{s.Addr().String()}, client.WithAuth("digest", []byte("alice:secret")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	owner := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "auth"}}}
	if _, _, err := c.Create(ctx, "/private", []byte("secret"), client.Persistent, owner); err != nil {
		t.Fatal(err)
	}
	var private console.Znode
	code, body = request(t, http.MethodGet, base+console.PathZnode+"?path=/private", token, "")
	if decode(t, body, &private); code != http.StatusOK || private.Data != nil || private.DataError != "NOAUTH" || private.Stat != nil {
		t.Errorf("GET /private: %d %+v", code, private)
	}
	code, body = request(t, http.MethodGet, base+console.PathZnode+"?path=/", "", "")
	if decode(t, body, &z); code != http.StatusOK || strings.Join(z.Children, ",") != "private,zookeeper" {
		t.Errorf("GET /: %d %+v", code, z)
	}

	// Within a couple of seconds, the load shows the writes.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var ss []console.Sample
		_, body := request(t, http.MethodGet, base+console.PathSeries, "", "")
		decode(t, body, &ss)
		var writes int64
		for _, x := range ss {
			writes += x.Writes
		}
		if writes >= 4 { // create, set, delete, the client's create
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("load samples count %d writes: %s", writes, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(log.String(), "console: write refused") || strings.Contains(log.String(), token) {
		t.Errorf("the log should name refused writes and never the token:\n%s", log)
	}
}

// TestConsoleLiveWatch: GET watch?path=P streams "ready" once the watch is
// in place, then a "change" for each event on P (its data, its children,
// its deletion) with the event's zxid, and tells nothing of a change an
// unauthenticated client may not read. Closing the server ends the stream.
func TestConsoleLiveWatch(t *testing.T) {
	s, _ := startLogged(t, func(c *server.Config) { c.AdminTokenFile = writeToken(t, "watch-token-0123") })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Connect(ctx, []string{s.Addr().String()}, client.WithAuth("digest", []byte("alice:secret")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Create(ctx, "/w", []byte("a"), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	owner := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "auth"}}}
	if _, _, err := c.Create(ctx, "/hidden", nil, client.Persistent, owner); err != nil {
		t.Fatal(err)
	}

	open := func(path string) (*bufio.Reader, func()) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.AdminAddr().String()+console.PathWatch+"?path="+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("GET watch %s: %v %v", path, err, resp)
		}
		return bufio.NewReader(resp.Body), func() { resp.Body.Close() }
	}
	// next returns the next event's name and data.
	next := func(r *bufio.Reader) (string, string) {
		var name, data string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case line == "" && name != "":
				return name, data
			}
		}
	}
	type change struct{ Type, Path, Zxid string }
	want := func(r *bufio.Reader, typ, path string, zxid int64) {
		t.Helper()
		name, data := next(r)
		var ch change
		json.Unmarshal([]byte(data), &ch)
		if name != "change" || ch.Type != typ || ch.Path != path || ch.Zxid != fmt.Sprintf("0x%x", zxid) {
			t.Fatalf("event %s %s, want change %s on %s at 0x%x", name, data, typ, path, zxid)
		}
	}

	w, closeW := open("/w")
	defer closeW()
	if name, _ := next(w); name != "ready" {
		t.Fatalf("first event %q, want ready", name)
	}
	st, err := c.Set(ctx, "/w", []byte("b"), -1)
	if err != nil {
		t.Fatal(err)
	}
	want(w, "NodeDataChanged", "/w", st.Mzxid)
	_, st2, err := c.Create(ctx, "/w/kid", nil, client.Persistent, zkproto.OpenACLUnsafe)
	if err != nil {
		t.Fatal(err)
	}
	want(w, "NodeChildrenChanged", "/w", st2.Czxid)

	// A change to a node only alice may read is not told; once anyone may
	// read it, the next one is.
	h, closeH := open("/hidden")
	defer closeH()
	if name, _ := next(h); name != "ready" {
		t.Fatalf("first event %q, want ready", name)
	}
	if _, err := c.Set(ctx, "/hidden", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetACL(ctx, "/hidden", zkproto.OpenACLUnsafe, -1); err != nil {
		t.Fatal(err)
	}
	st3, err := c.Set(ctx, "/hidden", []byte("y"), -1)
	if err != nil {
		t.Fatal(err)
	}
	want(h, "NodeDataChanged", "/hidden", st3.Mzxid)

	// The server's close ends the streams.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := w.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	s.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream outlived the server")
	}
}
