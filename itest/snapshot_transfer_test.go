package itest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestFollowerThatLostItsDiskCatchesUpFromASnapshot: in classic-3 under
// writes, a follower is killed and comes back with an empty data
// directory. The leader has compacted its log into a snapshot of several
// mebibytes, which goes to the follower in chunk frames while the writes
// go on; the follower must end with every znode, serve reads and writes,
// and count again.
func TestFollowerThatLostItsDiskCatchesUpFromASnapshot(t *testing.T) {
	c, l := startRegistered(t, Classic3, "snapCount=100")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := client.Connect(ctx, []string{serverAddr(t, c, l)}, client.WithSessionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// 6 MiB of znodes: the snapshot needs six chunks or more.
	const nodes, size = 192, 32 << 10
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, size) }
	for i := range nodes {
		if _, _, err := cl.Create(ctx, fmt.Sprintf("/n%03d", i), value(i), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
			t.Fatal(err)
		}
	}
	var f launcher.Server
	for _, s := range c.Servers {
		if s.ID != l {
			f = s
			break
		}
	}
	if err := c.Kill(f.ID); err != nil {
		t.Fatal(err)
	}
	// More writes than snapCount, so that the leader's log no longer
	// reaches back to the start and the follower gets the snapshot.
	for i := range 300 {
		if _, err := cl.Set(ctx, fmt.Sprintf("/n%03d", i%nodes), value(i%nodes), -1); err != nil {
			t.Fatal(err)
		}
	}
	// A new disk: empty but for myid, which the operator puts back (as
	// with ZooKeeper).
	data := filepath.Join(f.Dir, "data")
	myid, err := os.ReadFile(filepath.Join(data, "myid"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), myid, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(f.ID); err != nil {
		t.Fatal(err)
	}
	// Writes go on while the follower catches up.
	writes := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 200 && err == nil; i++ {
			_, err = cl.Set(ctx, "/n000", value(0), -1)
		}
		writes <- err
	}()
	waitRegistered(t, c, time.Minute)
	if err := <-writes; err != nil {
		t.Fatalf("writes while the follower caught up: %v", err)
	}
	rd, err := client.Connect(ctx, []string{f.ClientAddr}, client.WithSessionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if _, err := rd.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		data, _, err := rd.Get(ctx, fmt.Sprintf("/n%03d", i))
		if err != nil || !bytes.Equal(data, value(i)) {
			t.Fatalf("/n%03d on the follower: %d bytes, %v", i, len(data), err)
		}
	}
	log, err := os.ReadFile(f.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "installed snapshot") {
		t.Fatal("the follower caught up without a snapshot: the test no longer tests the transfer")
	}
	createAcknowledged(ctx, t, f.ClientAddr, "/after")
	checkEveryServerServes(ctx, t, c, "/after", "follower's catch-up")
}
