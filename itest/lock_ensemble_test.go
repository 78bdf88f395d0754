package itest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/lockcheck"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/recipes"
)

// TestLocksSurviveServerKills: 20 clients spread over an ensemble contend
// for a queue lock and a test-and-set lock while the leader is killed and
// restarted and then a coordinator (forest) or another server (classic) is
// killed. Sessions move to other servers and keep their lock nodes, so the
// independent checker of the acquire/release history must find mutual
// exclusion, FIFO grants for the queue lock, and every client finishing.
func TestLocksSurviveServerKills(t *testing.T) {
	for _, sh := range []members.Shape{Classic3, Forest9x33} {
		t.Run(sh.String(), func(t *testing.T) {
			c := StartEnsemble(t, sh)
			all := addrs(c)
			for _, kind := range []struct {
				name string
				fifo bool
				make func(*client.Conn, string) recipes.Locker
			}{
				{"queue", true, func(cn *client.Conn, p string) recipes.Locker { return recipes.NewQueueLock(cn, p) }},
				{"tas", false, func(cn *client.Conn, p string) recipes.Locker { return recipes.NewTASLock(cn, p) }},
			} {
				t.Run(kind.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
					defer cancel()
					path := "/locks/" + kind.name
					var hist lockcheck.History
					var wg sync.WaitGroup
					const clients, rounds = 20, 8
					errs := make(chan error, clients)
					for i := 0; i < clients; i++ {
						cn, err := client.Connect(ctx, all, client.WithSessionTimeout(6*time.Second))
						if err != nil {
							t.Fatal(err)
						}
						defer cn.Close()
						wg.Add(1)
						go func(i int, cn *client.Conn) {
							defer wg.Done()
							l := kind.make(cn, path)
							rng := rand.New(rand.NewPCG(uint64(i), 3))
							for r := 0; r < rounds; r++ {
								time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
								h := lockcheck.Hold{Client: fmt.Sprint(i), Path: path, Position: lockcheck.NoPosition, Requested: time.Now()}
								// A failover can fail a call; the recipe finds
								// its node again on the retry.
								var err error
								for try := 0; try < 20; try++ {
									if err = l.Lock(ctx); err == nil {
										break
									}
									time.Sleep(100 * time.Millisecond)
								}
								if err != nil {
									errs <- fmt.Errorf("client %d round %d: lock: %w", i, r, err)
									return
								}
								h.Acquired = time.Now()
								seq, err := l.Sequencer()
								if err != nil {
									errs <- err
									return
								}
								h.Shared = seq.Mode == recipes.Shared
								if kind.fifo {
									h.Position = seq.Generation
								}
								time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
								h.Released = time.Now()
								hist.Add(h)
								for try := 0; try < 20; try++ {
									if err = l.Unlock(ctx); err == nil {
										break
									}
									time.Sleep(100 * time.Millisecond)
								}
								if err != nil {
									errs <- fmt.Errorf("client %d round %d: unlock: %w", i, r, err)
									return
								}
							}
						}(i, cn)
					}
					time.Sleep(600 * time.Millisecond)
					leader, err := Leader(c, 10*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("killing the leader, server %d", leader)
					if err := c.Kill(leader); err != nil {
						t.Fatal(err)
					}
					time.Sleep(time.Second)
					if err := c.Restart(leader); err != nil {
						t.Fatal(err)
					}
					time.Sleep(600 * time.Millisecond)
					other := roleOf(c, "coordinator")
					if other == 0 {
						other = roleOf(c, "acceptor")
					}
					t.Logf("killing server %d", other)
					if err := c.Kill(other); err != nil {
						t.Fatal(err)
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						t.Error(err)
					}
					if err := c.Restart(other); err != nil {
						t.Fatal(err)
					}
					holds := hist.Holds()
					if len(holds) != clients*rounds {
						t.Errorf("%d holds, want %d", len(holds), clients*rounds)
					}
					for _, v := range lockcheck.Check(holds, lockcheck.Options{FIFO: kind.fifo}) {
						t.Error(v)
					}
					if _, err := Leader(c, 20*time.Second); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}
