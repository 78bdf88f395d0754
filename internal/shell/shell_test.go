package shell

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/embed"
	"github.com/giraffe-coord/giraffe/recipes"
	"github.com/giraffe-coord/giraffe/server"
)

// syncBuffer is a bytes.Buffer safe for the shell's watch goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startServer starts a standalone server, its configuration changed by
// mutate, and returns its client address.
func startServer(t *testing.T, mutate ...func(*server.Config)) string {
	t.Helper()
	cfg := embed.Standalone(t.TempDir())
	cfg.ForceSync = false
	cfg.ExtendedTypes = true
	for _, m := range mutate {
		m(&cfg)
	}
	srv, err := embed.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Addr().String()
}

func newShell(t *testing.T, addr string) (*Shell, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	s, err := New(t.Context(), addr, out, client.WithSessionTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, out
}

// TestScript runs a script through Run and compares the transcript.
func TestScript(t *testing.T) {
	s, out := newShell(t, startServer(t))
	script := `create /a hello
create /a again
get /a
set /a world
get /a
create -s /a/q- x
create -e /a/eph
create -c /box
create -t 60000 /ttl t
ls /a
ls -R /a
delete /a
deleteall /a
ls /
get /nope
setAcl /box world:anyone:cdr
getAcl /box
frobnicate
create relative
`
	failed := s.Run(t.Context(), strings.NewReader(script), "")
	if !failed {
		t.Fatal("Run reported no failure")
	}
	want := `Created /a
Node already exists: /a
hello
world
Created /a/q-0000000000
Created /a/eph
Created /box
Created /ttl
[eph, q-0000000000]
/a
/a/eph
/a/q-0000000000
Node not empty: /a
[box, ttl, zookeeper]
Node does not exist: /nope
'world,'anyone
: cdr
unknown command "frobnicate" (try help)
bad arguments: path must start with / : relative
usage: create [-e] [-s] [-c] [-t TTL_MS] PATH [DATA] [ACL]
`
	if got := out.String(); got != want {
		t.Fatalf("transcript:\n%s\nwant:\n%s", got, want)
	}
}

// TestWatchAndStat: a persistent watch prints the events of another
// session's changes; get -w prints the next change once.
func TestWatchAndStat(t *testing.T) {
	addr := startServer(t)
	s, out := newShell(t, addr)
	other, _ := newShell(t, addr)
	ctx := t.Context()
	for _, line := range []string{"create /w 1", "watch /w", "get -w /w"} {
		if err := s.Exec(ctx, line); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Exec(ctx, "set /w 2"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(out.String(), "type:NodeDataChanged path:/w") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := strings.Count(out.String(), "WATCHER::"); n != 2 {
		t.Fatalf("%d watcher lines (want the persistent and the one-shot):\n%s", n, out)
	}
	if err := s.Exec(ctx, "stat /w"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "dataVersion = 1\n") || !strings.Contains(out.String(), "dataLength = 1\n") {
		t.Fatalf("stat:\n%s", out)
	}
}

// TestLockExcludes: a lock taken in the shell keeps another client's
// queue lock waiting until unlock.
func TestLockExcludes(t *testing.T) {
	addr := startServer(t)
	s, out := newShell(t, addr)
	ctx := t.Context()
	if err := s.Exec(ctx, "lock /locks/x"); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "lock /locks/x"); err == nil {
		t.Fatal("locking twice succeeded")
	}
	c, err := client.Connect(ctx, []string{addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make(chan error, 1)
	go func() { got <- recipes.NewQueueLock(c, "/locks/x").Lock(ctx) }()
	select {
	case err := <-got:
		t.Fatalf("another client got the shell's lock (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := s.Exec(ctx, "unlock /locks/x"); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "locked /locks/x (sequencer zkseq1:exclusive:") {
		t.Fatalf("output:\n%s", out)
	}
}

// TestComplete: command names and znode paths complete.
func TestComplete(t *testing.T) {
	s, _ := newShell(t, startServer(t))
	ctx := context.Background()
	for _, p := range []string{"/app", "/app/alpha", "/app/beta", "/apple"} {
		if err := s.Exec(ctx, "create "+p); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		line string
		want []string
	}{
		{"de", []string{"delete ", "deleteall ", "delquota "}},
		{"get /ap", []string{"get /app", "get /apple"}},
		{"ls /app/", []string{"ls /app/alpha", "ls /app/beta"}},
		{"ls -s /app/b", []string{"ls -s /app/beta"}},
		{"ls /none/x", nil},
		{"set ", nil},
		{"getA", []string{"getAcl ", "getAllChildrenNumber "}},
		{"rem", []string{"removewatches "}},
		{"addWatch -m ", []string{"addWatch -m PERSISTENT ", "addWatch -m PERSISTENT_RECURSIVE "}},
		{"addWatch -m persistent_", []string{"addWatch -m PERSISTENT_RECURSIVE "}},
		{"addWatch -m PERSISTENT /ap", []string{"addWatch -m PERSISTENT /app", "addWatch -m PERSISTENT /apple"}},
		{"setquota -n 3 /app/a", []string{"setquota -n 3 /app/alpha"}},
	} {
		if got := s.Complete(ctx, c.line); !slices.Equal(got, c.want) {
			t.Fatalf("Complete(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

// TestParseACL: zkCli's ACL syntax.
func TestParseACL(t *testing.T) {
	acl, err := ParseACL("world:anyone:cdrwa,digest:bob:abc=:r,ip:10.0.0.0/8:rw")
	if err != nil || len(acl) != 3 || acl[0].Perms != 31 || acl[1].ID.ID != "bob:abc=" || acl[1].Perms != 1 ||
		acl[2].ID.Scheme != "ip" || acl[2].Perms != 3 {
		t.Fatalf("%+v %v", acl, err)
	}
	for _, bad := range []string{"world", "world:anyone:x", "nocolon:r"} {
		if _, err := ParseACL(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// TestQuotedWords: data with blanks is written whole when quoted, in
// single or double quotes, and an unterminated quote is a usage error.
func TestQuotedWords(t *testing.T) {
	s, out := newShell(t, startServer(t))
	script := `create /q "two words"
get /q
create /s 'say "hi"'
get /s
set /q "a \"quoted\" word"
get /q
create /u "open
`
	if !s.Run(t.Context(), strings.NewReader(script), "") {
		t.Fatal("Run reported no failure")
	}
	want := `Created /q
two words
Created /s
say "hi"
a "quoted" word
bad arguments: unterminated " quote
`
	if got := out.String(); got != want {
		t.Fatalf("transcript:\n%s\nwant:\n%s", got, want)
	}
}

func TestSplitWords(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{"", nil},
		{"  ls   -R  / ", []string{"ls", "-R", "/"}},
		{`create /a "b c"`, []string{"create", "/a", "b c"}},
		{`create /a 'b "c"'`, []string{"create", "/a", `b "c"`}},
		{`create /a x"y z"w`, []string{"create", "/a", "xy zw"}},
		{`create /a ""`, []string{"create", "/a", ""}},
		{`set /a "back\\slash"`, []string{"set", "/a", `back\slash`}},
	} {
		got, err := splitWords(c.line)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", c.line, got, err, c.want)
		}
	}
	if _, err := splitWords(`get '/a`); err == nil {
		t.Error("an unterminated quote was accepted")
	}
}
