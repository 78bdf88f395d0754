package forest

import (
	"cmp"
	"fmt"
	"slices"
)

// MaxSnapshotServers bounds the number of servers Restore accepts, so that a
// hostile snapshot cannot make it allocate without limit.
const MaxSnapshotServers = 1 << 20

// Snapshot is a self-contained copy of a forest: enough to rebuild it exactly
// (Restore), including how it will react to later changes. It is how a
// membership view travels to a joining or lagging server; it is plain data,
// ready for any encoding.
type Snapshot struct {
	Trees       int
	MaxChildren int
	Servers     []SnapshotServer // ascending id
}

// SnapshotServer is one server of a Snapshot.
type SnapshotServer struct {
	ID    ServerID
	Addr  string
	Color Color
	// Position is the server's place in the heap of its group (Group order).
	Position int
	// Parents holds the server's parent in each tree, None for a root.
	Parents []ServerID
}

// Snapshot returns a copy of f as plain data.
func (f *Forest) Snapshot() Snapshot {
	s := Snapshot{Trees: f.cfg.Trees, MaxChildren: f.cfg.MaxChildren, Servers: make([]SnapshotServer, 0, len(f.nodes))}
	for _, id := range f.Servers() {
		n := f.nodes[id]
		ss := SnapshotServer{ID: id, Addr: n.addr, Color: n.color, Position: n.pos, Parents: make([]ServerID, len(n.links))}
		for k, l := range n.links {
			ss.Parents[k] = None
			if l.parent != nil {
				ss.Parents[k] = l.parent.id
			}
		}
		s.Servers = append(s.Servers, ss)
	}
	return s
}

// Restore rebuilds the forest s was taken from. s may come from the network:
// Restore checks everything (it returns an error, never panics) and accepts s
// only if the result satisfies CheckInvariants, so a restored forest behaves
// exactly like the original under later changes.
func Restore(s Snapshot) (*Forest, error) {
	f, err := New(Config{Trees: s.Trees, MaxChildren: s.MaxChildren})
	if err != nil {
		return nil, err
	}
	if len(s.Servers) > MaxSnapshotServers {
		return nil, fmt.Errorf("forest: snapshot has %d servers, limit %d", len(s.Servers), MaxSnapshotServers)
	}
	servers := slices.Clone(s.Servers)
	slices.SortFunc(servers, func(a, b SnapshotServer) int { return cmp.Compare(a.ID, b.ID) })
	for _, ss := range servers {
		if ss.ID == None {
			return nil, fmt.Errorf("forest: snapshot uses reserved id %d", uint32(None))
		}
		if f.nodes[ss.ID] != nil {
			return nil, fmt.Errorf("forest: snapshot lists server %d twice", ss.ID)
		}
		if int(ss.Color) >= s.Trees {
			return nil, fmt.Errorf("forest: snapshot server %d has color %d, only %d trees", ss.ID, ss.Color, s.Trees)
		}
		if len(ss.Parents) != s.Trees {
			return nil, fmt.Errorf("forest: snapshot server %d has %d parents, want %d", ss.ID, len(ss.Parents), s.Trees)
		}
		if len(ss.Addr) > MaxAddrLen {
			return nil, fmt.Errorf("forest: snapshot server %d address longer than %d", ss.ID, MaxAddrLen)
		}
		f.nodes[ss.ID] = &node{id: ss.ID, addr: ss.Addr, color: ss.Color, pos: ss.Position, links: make([]link, s.Trees)}
	}
	for k := range f.trees {
		t := &f.trees[k]
		for _, ss := range servers {
			if ss.Color == Color(k) {
				t.core = append(t.core, nil)
			}
		}
		for _, ss := range servers {
			if ss.Color != Color(k) {
				continue
			}
			if ss.Position < 0 || ss.Position >= len(t.core) || t.core[ss.Position] != nil {
				return nil, fmt.Errorf("forest: snapshot server %d has bad position %d in group %d", ss.ID, ss.Position, k)
			}
			t.core[ss.Position] = f.nodes[ss.ID]
		}
		for _, ss := range servers {
			x := f.nodes[ss.ID]
			pid := ss.Parents[k]
			if pid == None {
				if t.root != nil {
					return nil, fmt.Errorf("forest: snapshot tree %d has two roots", k)
				}
				t.root = x
				continue
			}
			p := f.nodes[pid]
			if p == nil || p == x {
				return nil, fmt.Errorf("forest: snapshot tree %d: server %d has bad parent %d", k, ss.ID, pid)
			}
			x.links[k].parent = p
			p.links[k].children = append(p.links[k].children, x)
		}
		if len(servers) > 0 && t.root == nil {
			return nil, fmt.Errorf("forest: snapshot tree %d has no root", k)
		}
		if err := f.rebuildCounters(Color(k)); err != nil {
			return nil, err
		}
	}
	if err := f.CheckInvariants(); err != nil {
		return nil, fmt.Errorf("forest: snapshot rejected: %w", err)
	}
	return f, nil
}

// rebuildCounters recomputes descendants, heights, interior bits, the room
// set and the host set of tree k from its parent links, failing if the links
// do not form one tree.
func (f *Forest) rebuildCounters(k Color) error {
	t := &f.trees[k]
	if t.root == nil {
		return nil
	}
	order := make([]*node, 0, len(f.nodes))
	seen := make(map[ServerID]bool, len(f.nodes))
	seen[t.root.id] = true
	for queue := []*node{t.root}; len(queue) > 0; queue = queue[1:] {
		x := queue[0]
		order = append(order, x)
		for _, c := range x.links[k].children {
			if seen[c.id] {
				return fmt.Errorf("forest: snapshot tree %d reaches server %d twice", k, c.id)
			}
			seen[c.id] = true
			queue = append(queue, c)
		}
	}
	if len(order) != len(f.nodes) {
		return fmt.Errorf("forest: snapshot tree %d: root reaches %d of %d servers", k, len(order), len(f.nodes))
	}
	for i := len(order) - 1; i >= 0; i-- {
		x := order[i]
		l := &x.links[k]
		l.desc, l.height = 0, 0
		for _, c := range l.children {
			l.desc += 1 + c.links[k].desc
			l.height = max(l.height, c.links[k].height+1)
		}
		f.childrenChanged(k, x)
	}
	return nil
}
