package server_test

import (
	"context"
	"encoding/json"
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
