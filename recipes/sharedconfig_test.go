package recipes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cfPublishAndRead: while one writer publishes 30 versions of five keys,
// readers never see two versions mixed; removed keys disappear.
func cfPublishAndRead(t *testing.T, addr, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := NewSharedConfig(lkConnect(t, addr), path)
	keys := []string{"a", "b", "c", "d", "e"}
	version := func(n int) map[string][]byte {
		m := map[string][]byte{}
		for _, k := range keys {
			m[k] = []byte(fmt.Sprintf("v%d", n))
		}
		return m
	}
	if err := w.Publish(ctx, version(0)); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	var reads atomic.Int32
	var wg sync.WaitGroup
	for r := range 4 {
		rc := NewSharedConfig(lkConnect(t, addr), path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				got, err := rc.Read(ctx)
				if err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
				if len(got) != len(keys) {
					t.Errorf("reader %d: %d keys: %q", r, len(got), got)
					return
				}
				for _, k := range keys {
					if string(got[k]) != string(got["a"]) {
						t.Errorf("reader %d saw a mix: %q", r, got)
						return
					}
				}
				reads.Add(1)
			}
		}()
	}
	for n := 1; n <= 30; n++ {
		if err := w.Publish(ctx, version(n)); err != nil {
			t.Fatal(err)
		}
	}
	done.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("no read completed")
	}
	if err := w.Publish(ctx, map[string][]byte{"a": []byte("only")}); err != nil {
		t.Fatal(err)
	}
	got, err := NewSharedConfig(lkConnect(t, addr), path).Read(ctx)
	if err != nil || len(got) != 1 || string(got["a"]) != "only" {
		t.Fatalf("after removing keys: %q %v", got, err)
	}
	if err := w.Publish(ctx, map[string][]byte{"ready": nil}); !errors.Is(err, ErrReservedKey) {
		t.Fatalf("publishing the marker as a key: %v", err)
	}
}

// TestSharedConfigGiraffe and TestSharedConfigZooKeeper: the ready pattern holds.
func TestSharedConfigGiraffe(t *testing.T)   { cfPublishAndRead(t, lkStartGiraffe(t), "/cfg/g") }
func TestSharedConfigZooKeeper(t *testing.T) { cfPublishAndRead(t, lkStartZooKeeper(t), "/cfg/z") }
