// Package barriers runs the ZooKeeper paper's double-barrier experiment
// (§5.3, Table 3) against any server that speaks ZooKeeper's protocol:
// `giraffe bench barriers` and scripts/bench-barriers-table.sh put Giraffe
// beside ZooKeeper with it.
package barriers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/recipes"
)

// Result is one cell of the ZooKeeper paper's Table 3.
type Result struct {
	Clients, Barriers int
	// Mean is the mean over clients of the time each took to enter every
	// barrier and then leave every barrier.
	Mean time.Duration
	// Ops is the number of barrier operations (enters and leaves) per
	// second over the whole run.
	OpsPerSec float64
}

// Run is the experiment: clients sessions, spread over servers, each enter
// the double barriers 0..barriers-1 in succession (each opening when all
// clients have entered it) and then leave them all in succession.
func Run(ctx context.Context, servers []string, clients, barriers int) (Result, error) {
	res := Result{Clients: clients, Barriers: barriers}
	root := fmt.Sprintf("/bench-barriers/c%d-b%d-%d", clients, barriers, time.Now().UnixNano())
	conns := make([]*client.Conn, clients)
	for i := range conns {
		list := slices.Clone(servers)
		rot := i % len(list)
		list = append(list[rot:], list[:rot]...)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		c, err := client.Connect(cctx, list, client.WithoutShuffle(), client.WithSessionTimeout(30*time.Second))
		cancel()
		if err != nil {
			return res, fmt.Errorf("connect: %w", err)
		}
		defer c.Close()
		conns[i] = c
	}
	took := make([]time.Duration, clients)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bs := make([]*recipes.DoubleBarrier, barriers)
			for k := range bs {
				bs[k] = recipes.NewDoubleBarrier(c, fmt.Sprintf("%s/b%05d", root, k), clients, fmt.Sprintf("c%d", i))
				if err := bs[k].Enter(ctx); err != nil {
					errs <- fmt.Errorf("client %d entering barrier %d: %w", i, k, err)
					return
				}
			}
			for k, b := range bs {
				if err := b.Leave(ctx); err != nil {
					errs <- fmt.Errorf("client %d leaving barrier %d: %w", i, k, err)
					return
				}
			}
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err, failed := <-errs; failed {
		return res, err
	}
	var sum time.Duration
	for _, d := range took {
		sum += d
	}
	res.Mean = sum / time.Duration(clients)
	res.OpsPerSec = float64(2*clients*barriers) / elapsed.Seconds()
	return res, nil
}
