package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// Peer is a member to ask for its report: its id and admin address.
type Peer struct {
	ID    quorum.ID
	Admin string
}

// View is what the gathering server knows of the ensemble without asking
// anyone: its own report, the members, the committed groups and the
// ensemble's shape.
type View struct {
	Self     Self
	Peers    []Peer
	Groups   [][]quorum.ID
	Topology gpaxos.Topology
	Trees    int
	Children int
	Classic  bool
	Cluster  string
}

// FetchTimeout bounds how long Gather waits for a member's report: the
// console polls about twice a second, and a member that cannot answer in
// this time is shown unreachable rather than holding the view back.
const FetchTimeout = 400 * time.Millisecond

// Fetcher asks a member for its report at its admin address.
type Fetcher func(ctx context.Context, admin string) (Self, error)

// HTTPFetcher asks a member's /ui/api/self with client c.
func HTTPFetcher(c *http.Client) Fetcher {
	return func(ctx context.Context, admin string) (Self, error) {
		var s Self
		err := getJSON(ctx, c, "http://"+admin+PathSelf, &s)
		return s, err
	}
}

// getJSON decodes the JSON answer of GET url into v.
func getJSON(ctx context.Context, c *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Gather asks every peer but the gathering server itself for its report,
// all at once and each for at most FetchTimeout, and assembles the
// ensemble: who leads, each group's coordinator and tree, each member's
// lag behind the leader.
func Gather(ctx context.Context, v View, fetch Fetcher) Ensemble {
	ms := make([]Member, len(v.Peers))
	var wg sync.WaitGroup
	for i, p := range v.Peers {
		if p.ID == v.Self.ID {
			ms[i] = Member{Self: v.Self, Reachable: true}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
			defer cancel()
			ms[i] = fetchMember(ctx, p, fetch)
		}()
	}
	wg.Wait()
	return assemble(v, ms, time.Now())
}

func fetchMember(ctx context.Context, p Peer, fetch Fetcher) Member {
	m := Member{Self: Self{ID: p.ID, Admin: p.Admin, Role: RoleUnreachable, Group: -1}}
	if p.Admin == "" {
		m.Error = "no admin address known"
		return m
	}
	s, err := fetch(ctx, p.Admin)
	switch {
	case err != nil:
		m.Error = err.Error()
	case s.ID != p.ID:
		m.Error = fmt.Sprintf("server %d answers at %s", s.ID, p.Admin)
	default:
		m.Self, m.Reachable = s, true
	}
	return m
}

// assemble builds the Ensemble from the members' reports (in v.Peers'
// order).
func assemble(v View, ms []Member, at time.Time) Ensemble {
	e := Ensemble{AnsweredBy: v.Self.ID, Trees: v.Trees, Children: v.Children, Classic: v.Classic,
		Cluster: v.Cluster, Members: ms, At: at.UnixMilli()}
	var leader *Member
	for i := range ms {
		if ms[i].Reachable && ms[i].Role == "leader" && (leader == nil || ms[i].Epoch > leader.Epoch) {
			leader = &ms[i]
		}
	}
	if leader != nil {
		e.Leader, e.Epoch = leader.ID, leader.Epoch
	}
	for i := range ms {
		ms[i].Lag = -1
		if leader != nil && ms[i].Reachable {
			ms[i].Lag = lag(leader.Applied, ms[i].Applied)
		}
	}
	for k, members := range v.Groups {
		e.Groups = append(e.Groups, group(k, members, ms, v.Topology))
	}
	return e
}

// group describes group k: its coordinator is the reachable member that
// reports coordinating it (the leader coordinates its own group), or else
// the one most of the group's reachable members follow.
func group(k int, members []quorum.ID, ms []Member, topo gpaxos.Topology) Group {
	g := Group{Index: k, Members: slices.Clone(members), Edges: [][2]quorum.ID{}, Down: []quorum.ID{}}
	votes := map[quorum.ID]int{}
	for _, m := range ms {
		if !m.Reachable || !slices.Contains(members, m.ID) {
			continue
		}
		if (m.Role == "coordinator" || m.Role == "leader") && m.Group == k {
			g.Coordinator = m.ID
			g.Down = append(g.Down, m.Down...)
			break
		}
		if m.Coordinator != 0 {
			votes[m.Coordinator]++
		}
	}
	if g.Coordinator == 0 {
		for id, n := range votes {
			if n > votes[g.Coordinator] || (n == votes[g.Coordinator] && id < g.Coordinator) {
				g.Coordinator = id
			}
		}
	}
	if g.Coordinator == 0 || topo == nil {
		return g
	}
	// Breadth first from the coordinator, as the group's messages go.
	queue := []quorum.ID{g.Coordinator}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, c := range topo.Children(members, g.Coordinator, g.Down, id) {
			g.Edges = append(g.Edges, [2]quorum.ID{id, c})
			queue = append(queue, c)
		}
	}
	return g
}

// lag is how many entries applied trails leader, both zxids in hex, or -1
// when they are of different epochs or unreadable.
func lag(leader, applied string) int64 {
	l, err1 := strconv.ParseUint(strings.TrimPrefix(leader, "0x"), 16, 64)
	a, err2 := strconv.ParseUint(strings.TrimPrefix(applied, "0x"), 16, 64)
	if err1 != nil || err2 != nil || l>>32 != a>>32 {
		return -1
	}
	return max(int64(l)-int64(a), 0)
}

// Zxid formats a zxid as the console shows it.
func Zxid(z uint64) string { return fmt.Sprintf("0x%x", z) }

// Collect asks every peer but the gathering server for path on its
// console (a GET answered with JSON), all at once and each for at most
// FetchTimeout, and returns the answers by server id with own, the
// gathering server's; a member that does not answer is left out.
func Collect[T any](ctx context.Context, v View, c *http.Client, path string, own T) map[quorum.ID]T {
	out := map[quorum.ID]T{v.Self.ID: own}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range v.Peers {
		if p.ID == v.Self.ID || p.Admin == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
			defer cancel()
			var x T
			if getJSON(ctx, c, "http://"+p.Admin+path, &x) == nil {
				mu.Lock()
				out[p.ID] = x
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}
