package recipes

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// ptMembers checks the membership of both layouts: members join and are
// listed, one leaves, one whose session closes disappears, and a watcher
// hears of each change.
func ptMembers(t *testing.T, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, mk := range []struct {
		name string
		new  func(string) *Party
	}{
		{"party", func(id string) *Party { return NewParty(lkConnect(t, addr), "/party/deep", id) }},
		{"shallow", func(id string) *Party { return NewShallowParty(lkConnect(t, addr), "/party/shallow", id) }},
	} {
		t.Run(mk.name, func(t *testing.T) {
			watcher := mk.new("watcher")
			a, b, c := mk.new("a"), mk.new("b"), mk.new("c")
			for _, p := range []*Party{a, b, c, c} {
				if err := p.Join(ctx); err != nil {
					t.Fatal(err)
				}
			}
			got, w, err := watcher.Watch(ctx)
			slices.Sort(got)
			if err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Fatalf("members %v %v", got, err)
			}
			if err := b.Leave(ctx); err != nil {
				t.Fatal(err)
			}
			if err := waitEvent(ctx, w); err != nil {
				t.Fatal(err)
			}
			c.conn.Close() // c's session ends: its node goes with it
			deadline := time.Now().Add(10 * time.Second)
			for {
				got, err = watcher.Members(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if slices.Equal(got, []string{"a"}) || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if !slices.Equal(got, []string{"a"}) {
				t.Fatalf("members after a leave and a closed session: %v", got)
			}
		})
	}
}

// TestPartyGiraffe and TestPartyZooKeeper: membership in both layouts.
func TestPartyGiraffe(t *testing.T)   { ptMembers(t, lkStartGiraffe(t)) }
func TestPartyZooKeeper(t *testing.T) { ptMembers(t, lkStartZooKeeper(t)) }

// TestPartyWithKazoo: kazoo lists the Go members of a Party and a
// ShallowParty, and the Go side lists kazoo's.
func TestPartyWithKazoo(t *testing.T) {
	py := lkKazooPython(t)
	addr := lkStartGiraffe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deep, shallow := NewParty(lkConnect(t, addr), "/kp/deep", "go-deep"), NewShallowParty(lkConnect(t, addr), "/kp/shallow", "go-shallow")
	for _, p := range []*Party{deep, shallow} {
		if err := p.Join(ctx); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(t.TempDir(), "kazoo_party.py")
	const src = `import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start()
p, s = zk.Party("/kp/deep", "kazoo-deep"), zk.ShallowParty("/kp/shallow", "kazoo-shallow")
p.join(); s.join()
print(",".join(sorted(p)) + ";" + ",".join(sorted(s)), flush=True)
sys.stdin.readline()
zk.stop()
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script, addr)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	lines.Scan()
	want := "go-deep,kazoo-deep;go-shallow,kazoo-shallow"
	if got := lines.Text(); got != want {
		t.Fatalf("kazoo lists %q, want %q", got, want)
	}
	for _, c := range []struct {
		p    *Party
		want []string
	}{{deep, []string{"go-deep", "kazoo-deep"}}, {shallow, []string{"go-shallow", "kazoo-shallow"}}} {
		got, err := c.p.Members(ctx)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, c.want) {
			t.Fatalf("Go lists %v %v, want %v", got, err, c.want)
		}
	}
	fmt.Fprintln(stdin)
}
