// Command embedded shows Giraffe running inside a Go program: it starts a
// standalone server in-process (package embed), and a few workers, each
// with its own in-process session, wait at a barrier, then take turns
// under a distributed lock to append to a shared log node. Another process
// could join in on the printed client port with any ZooKeeper client.
//
//	go run ./examples/embedded [--dir DIR] [--workers N] [--rounds R]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/embed"
	"github.com/giraffe-coord/giraffe/recipes"
	"github.com/giraffe-coord/giraffe/zkproto"
)

func main() {
	dir := flag.String("dir", "", "data directory (default: a fresh temporary one, removed at exit)")
	workers := flag.Int("workers", 4, "workers, each with its own session")
	rounds := flag.Int("rounds", 3, "times each worker takes the lock")
	flag.Parse()
	if err := run(os.Stdout, *dir, *workers, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "embedded:", err)
		os.Exit(1)
	}
}

// run is the whole example; it returns the shared log's lines in the order
// the lock granted them.
func run(out io.Writer, dir string, workers, rounds int) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "giraffe-embedded-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	srv, err := embed.Start(embed.Standalone(dir), nil)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "giraffe server running in this process; data in %s, client port %s\n", dir, srv.Addr())

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := srv.Connect(ctx)
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, _, err := admin.Create(ctx, "/log", nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		return err
	}
	start := recipes.NewBarrier(admin, "/start")
	if err := start.Create(ctx); err != nil {
		return err
	}

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		conn, err := srv.Connect(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- worker(ctx, conn, w, rounds)
		}()
	}
	fmt.Fprintf(out, "%d workers started; lowering the barrier /start they wait at\n", workers)
	if _, err := start.Remove(ctx); err != nil {
		return err
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	data, st, err := admin.Get(ctx, "/log")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "/log after %d appends under the lock (version %d):\n%s", st.Version, st.Version, data)
	if want := int32(workers * rounds); st.Version != want {
		return fmt.Errorf("/log has %d appends, want %d", st.Version, want)
	}
	return nil
}

// worker waits for the barrier, then appends rounds lines to /log, each
// under the queue lock: a read-modify-write that would lose lines if two
// workers ever held the lock at once (the versioned set would fail).
func worker(ctx context.Context, conn *client.Conn, id, rounds int) error {
	if err := recipes.NewBarrier(conn, "/start").Wait(ctx); err != nil {
		return err
	}
	lock := recipes.NewQueueLock(conn, "/locks/log")
	for r := range rounds {
		if err := lock.Lock(ctx); err != nil {
			return err
		}
		data, st, err := conn.Get(ctx, "/log")
		if err == nil {
			line := fmt.Sprintf("worker %d, round %d\n", id, r)
			_, err = conn.Set(ctx, "/log", []byte(string(data)+line), st.Version)
		}
		if uerr := lock.Unlock(ctx); err == nil {
			err = uerr
		}
		if err != nil {
			return fmt.Errorf("worker %d: %w", id, err)
		}
	}
	return nil
}
