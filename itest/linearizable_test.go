package itest

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// regOp is one client operation on a znode used as a register.
type regOp struct {
	Key   int
	Write bool
	Value string
	// Synced marks a read made as sync followed by getData: it must be
	// linearizable. Plain reads may be stale (ZooKeeper promises only
	// sequential consistency for them) and are checked separately.
	Synced bool
}

type regOut struct {
	Value   string
	Unknown bool // a write whose outcome the client never learned
}

// registerModel is a set of independent registers; porcupine checks each
// key on its own (partitioned by key).
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(regOp).Key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in, out := input.(regOp), output.(regOut)
		if in.Write {
			return true, in.Value
		}
		return out.Value == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regOp), output.(regOut)
		if in.Write {
			return fmt.Sprintf("write(k%d, %q)", in.Key, in.Value)
		}
		return fmt.Sprintf("read(k%d) -> %q", in.Key, out.Value)
	},
}

// TestLinearizableUnderFaults runs clients on every server of an ensemble
// doing writes, synced reads and plain reads on three znodes while servers
// are killed and restarted, the leader is paused and resumed and the
// network is partitioned (isolation, one-way cuts); the synced
// reads and writes must be linearizable (porcupine), and every client's
// plain reads must never go back in time.
func TestLinearizableUnderFaults(t *testing.T) {
	shapes := []members.Shape{Classic3, Forest9x33}
	if testing.Short() {
		shapes = shapes[:1]
	}
	for _, sh := range shapes {
		t.Run(sh.String(), func(t *testing.T) { runLinearizable(t, sh, 12*time.Second, linOptions{}) })
	}
}

// linOptions vary runLinearizable.
type linOptions struct {
	extra  []string // zoo.cfg lines
	parent string   // of the registers ("": the root)
	// load, when set, runs alongside the clients until stop is closed.
	load func(c *launcher.Cluster, stop <-chan struct{})
}

func runLinearizable(t *testing.T, sh members.Shape, dur time.Duration, opt linOptions) {
	c := StartEnsemble(t, sh, opt.extra...)
	all := addrs(c)
	setup := zkConnect(t, all)
	for k := 0; k < 3; k++ {
		if _, err := setup.Create(fmt.Sprintf("%s/k%d", opt.parent, k), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	var mu sync.Mutex
	var history []porcupine.Operation
	record := func(client int, in regOp, out regOut, call, ret time.Time) {
		mu.Lock()
		history = append(history, porcupine.Operation{ClientId: client, Input: in, Output: out,
			Call: call.Sub(start).Nanoseconds(), Return: ret.Sub(start).Nanoseconds()})
		mu.Unlock()
	}
	var pending []porcupine.Operation // writes with an unknown outcome
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if opt.load != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opt.load(c, stop)
		}()
	}
	var stale []string
	const clients = 6
	for cl := 0; cl < clients; cl++ {
		wg.Add(1)
		go func(cl int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(cl)))
			order := append(append([]string{}, all[cl%len(all):]...), all[:cl%len(all)]...)
			conn, _, err := zk.Connect(order, 2*time.Second, zk.WithLogInfo(false))
			if err != nil {
				return
			}
			defer conn.Close()
			lastSeen := map[int]int64{} // per key, the newest mzxid a plain read saw
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := rng.Intn(3)
				path := fmt.Sprintf("%s/k%d", opt.parent, k)
				call := time.Now()
				switch r := rng.Intn(10); {
				case r < 4:
					v := fmt.Sprintf("c%d-%d", cl, i)
					_, err := conn.Set(path, []byte(v), -1)
					if err == nil {
						record(cl, regOp{Key: k, Write: true, Value: v}, regOut{}, call, time.Now())
					} else if err == zk.ErrConnectionClosed || err == zk.ErrSessionExpired || strings.Contains(err.Error(), "connection") {
						mu.Lock()
						pending = append(pending, porcupine.Operation{ClientId: cl, Input: regOp{Key: k, Write: true, Value: v},
							Output: regOut{Unknown: true}, Call: call.Sub(start).Nanoseconds()})
						mu.Unlock()
					}
				case r < 8:
					if _, err := conn.Sync(path); err != nil {
						continue
					}
					data, _, err := conn.Get(path)
					if err == nil {
						record(cl, regOp{Key: k, Synced: true}, regOut{Value: string(data)}, call, time.Now())
					}
				default:
					_, st, err := conn.Get(path)
					if err == nil {
						if st.Mzxid < lastSeen[k] {
							mu.Lock()
							stale = append(stale, fmt.Sprintf("client %d key %d: mzxid %x after %x", cl, k, st.Mzxid, lastSeen[k]))
							mu.Unlock()
						}
						lastSeen[k] = st.Mzxid
					}
				}
			}
		}(cl)
	}
	faults(t, c, dur)
	close(stop)
	wg.Wait()
	end := time.Since(start).Nanoseconds() + 1
	for _, op := range pending {
		op.Return = end // it may have taken effect at any point up to the end
		history = append(history, op)
	}
	writes, synced := 0, 0
	for _, op := range history {
		if op.Input.(regOp).Write {
			writes++
		} else {
			synced++
		}
	}
	t.Logf("%d operations (%d writes, %d synced reads, %d unknown writes)", len(history), writes, synced, len(pending))
	if writes < 20 || synced < 20 {
		t.Fatalf("too little progress under faults: %d writes, %d synced reads", writes, synced)
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, history, 60*time.Second)
	if res != porcupine.Ok {
		if f, err := os.CreateTemp("", "giraffe-lin-*.html"); err == nil {
			porcupine.Visualize(registerModel, info, f)
			f.Close()
			t.Logf("visualization: %s", f.Name())
		}
		t.Fatalf("history is not linearizable: %v", res)
	}
	if len(stale) > 0 {
		t.Fatalf("plain reads went back in time: %v", stale[:min(3, len(stale))])
	}
}

// faults kills and restarts servers, pauses the leader, isolates a server
// and cuts one direction between the leader and another server while the
// clients run.
func faults(t *testing.T, c *launcher.Cluster, dur time.Duration) {
	deadline := time.Now().Add(dur)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := 0; time.Now().Before(deadline); i++ {
		time.Sleep(time.Second)
		switch i % 4 {
		case 0: // kill and restart a random server
			s := c.Servers[rng.Intn(len(c.Servers))]
			t.Logf("SIGKILL server %d", s.ID)
			c.Kill(s.ID)
			time.Sleep(500 * time.Millisecond)
			c.Restart(s.ID)
		case 1: // pause the leader past the election timeout, then resume it
			id, err := Leader(c, 5*time.Second)
			if err != nil {
				continue
			}
			t.Logf("SIGSTOP leader %d", id)
			c.Signal(id, syscall.SIGSTOP)
			time.Sleep(1500 * time.Millisecond)
			c.Signal(id, syscall.SIGCONT)
			t.Logf("SIGCONT %d", id)
		case 2: // cut a random server off, then heal
			s := c.Servers[rng.Intn(len(c.Servers))]
			t.Logf("isolate server %d", s.ID)
			c.Fault(s.ID, "isolate")
			time.Sleep(1500 * time.Millisecond)
			c.Fault(s.ID, "heal")
		case 3: // one-way partition: the leader cannot reach one server
			id, err := Leader(c, 5*time.Second)
			if err != nil {
				continue
			}
			other := c.Servers[rng.Intn(len(c.Servers))].ID
			if other == id {
				continue
			}
			t.Logf("leader %d cannot send to %d", id, other)
			c.Fault(id, fmt.Sprintf("block %d", other))
			time.Sleep(1500 * time.Millisecond)
			c.Fault(id, "heal")
		}
	}
	if _, err := Leader(c, 20*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestLinearizableWhileSnapshotting runs the linearizability test with a
// snapshot every 100 entries while loaders grow the tree by thousands of
// znodes (over a thousand at least), so that every snapshot is written in many pieces while the
// registers change between them (datatree's SnapshotWriter), and every
// restart of a killed server loads one: the synced reads and writes stay
// linearizable.
func TestLinearizableWhileSnapshotting(t *testing.T) {
	var created atomic.Int64
	defer func() {
		t.Logf("%d znodes created meanwhile", created.Load())
		// A snapshot writer takes 1,024 nodes per hold of the lock.
		if !t.Failed() && created.Load() < 1100 {
			t.Fatalf("the loaders created %d znodes: too few for snapshots written in pieces", created.Load())
		}
	}()
	runLinearizable(t, Classic3, 12*time.Second, linOptions{extra: []string{"snapCount=100"},
		load: func(c *launcher.Cluster, stop <-chan struct{}) {
			loadCreates(c, stop, 2, func(i, n int) string { return fmt.Sprintf("/fill%d-%d", i, n) }, make([]byte, 256), &created)
		}})
}

// loadCreates runs clients sessions, the i-th connecting to the servers of
// c from the i-th on, each creating the znodes path(i, 0), path(i, 1), ...
// with data until stop is closed, and counts those created in created.
func loadCreates(c *launcher.Cluster, stop <-chan struct{}, clients int, path func(i, n int) string, data []byte, created *atomic.Int64) {
	all := addrs(c)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		order := append(append([]string{}, all[i%len(all):]...), all[:i%len(all)]...)
		cl, _, err := zk.Connect(order, 4*time.Second, zk.WithLogInfo(false))
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := cl.Create(path(i, n), data, 0, zk.WorldACL(zk.PermAll)); err != nil {
					time.Sleep(5 * time.Millisecond)
				} else {
					created.Add(1)
				}
			}
		}()
	}
	wg.Wait()
}
