package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/storage/snap"
	"github.com/giraffe-coord/giraffe/server"
)

// TestSnapshotCommand takes a snapshot of a standalone server through the
// admin port: it is a valid snapshot file holding every write answered
// before it, at the zxid its last_zxid header names; the metrics port
// refuses the command, the admin port wants the token, streaming=false
// answers the headers alone, and restore is refused with the offline way.
func TestSnapshotCommand(t *testing.T) {
	const token = "0123456789abcdef"
	s, _ := startLogged(t, func(c *server.Config) { c.AdminTokenFile = writeToken(t, token) })
	zc, _ := connect(t, s.Addr().String())
	for i := range 50 {
		if _, err := zc.Create(fmt.Sprintf("/n%02d", i), []byte{byte(i)}, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	admin := s.AdminAddr().String()
	stream, lastZxid, err := adminapi.Client{Token: token}.Snapshot(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var tree *datatree.Tree
	info, err := snap.Receive(filepath.Join(t.TempDir(), "backup.snap"), stream, func(zxid int64, r io.Reader) error {
		tree, err = datatree.ReadSnapshot(r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("0x%x", info.Zxid); lastZxid != want || tree.LastZxid() != info.Zxid {
		t.Fatalf("last_zxid %s, file at %#x, tree at %#x", lastZxid, info.Zxid, tree.LastZxid())
	}
	for i := range 50 {
		if data, _, code := tree.GetData(fmt.Sprintf("/n%02d", i), nil); code != 0 || len(data) != 1 || data[0] != byte(i) {
			t.Fatalf("/n%02d in the snapshot: %v %v", i, data, code)
		}
	}

	if _, _, err := (adminapi.Client{Token: "wrong"}).Snapshot(context.Background(), admin); err == nil ||
		!strings.Contains(err.Error(), "401") {
		t.Errorf("snapshot with a wrong token: %v, want 401", err)
	}
	if code, out := getCommand(t, "http://"+s.MetricsAddr().String(), "", "snapshot"); code != http.StatusForbidden || out["error"] == nil {
		t.Errorf("snapshot on the metrics port: %d %v, want 403", code, out)
	}
	code, out := getCommand(t, "http://"+admin, token, "snap?streaming=false")
	if code != http.StatusOK || out["command"] != "snapshot" || out["error"] != nil ||
		out["last_zxid"] != lastZxid || out["snapshot_size"] != float64(info.Size) {
		t.Errorf("snapshot?streaming=false: %d %v, want last_zxid %s and size %d", code, out, lastZxid, info.Size)
	}
	code, body := request(t, http.MethodPost, "http://"+admin+"/commands/restore", token, "")
	if code != http.StatusNotImplemented || !strings.Contains(body, "giraffe snapshot restore") {
		t.Errorf("restore: %d %s, want 501 naming the offline restore", code, body)
	}
}

// TestSnapshotCommandBesideWritesAndSnapshots takes snapshots through the
// admin port while writers change the tree and the server writes its own
// snapshot every 50 entries: each is valid (checksum and digest), holds
// every write answered before it was asked for, and none stopped the
// writers.
func TestSnapshotCommandBesideWritesAndSnapshots(t *testing.T) {
	const token = "0123456789abcdef"
	s, _ := startLogged(t, func(c *server.Config) { c.AdminTokenFile = writeToken(t, token); c.SnapCount = 50 })
	zc, _ := connect(t, s.Addr().String())
	for batch := range 30 {
		var ops []any
		for i := batch * 100; i < (batch+1)*100; i++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("/n%04d", i), Data: []byte("x"), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := zc.Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	written := make(chan int, 1)
	go func() {
		n := 0
		defer func() { written <- n }()
		for ; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := zc.Set(fmt.Sprintf("/n%04d", n%3000), []byte(fmt.Sprint(n)), -1); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for round := range 5 {
		marker := fmt.Sprintf("/marker%d", round)
		if _, err := zc.Create(marker, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		stream, _, err := adminapi.Client{Token: token}.Snapshot(context.Background(), s.AdminAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		var tree *datatree.Tree
		_, err = snap.Receive(filepath.Join(t.TempDir(), "backup.snap"), stream, func(_ int64, r io.Reader) error {
			tree, err = datatree.ReadSnapshot(r)
			return err
		})
		stream.Close()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, _, code := tree.GetData(marker, nil); code != 0 || tree.NodeCount() < 3000 {
			t.Fatalf("round %d: %s %v in a snapshot of %d nodes", round, marker, code, tree.NodeCount())
		}
	}
	close(stop)
	if n := <-written; n == 0 {
		t.Fatal("no write was answered while the snapshots were taken")
	}
}
