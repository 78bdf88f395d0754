package forest_test

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// A 3-3 forest of seven servers: three groups, one tree per group, rooted at
// the group's coordinator.
func Example() {
	f, _ := forest.New(forest.Config{Trees: 3, MaxChildren: 3})
	for id := forest.ServerID(1); id <= 7; id++ {
		f.Join(id, fmt.Sprintf("10.0.0.%d:2888", id))
	}
	for k := range forest.Color(3) {
		root, _ := f.Root(k)
		fmt.Printf("group %d %v, coordinator %d, children of the coordinator %v\n", k, f.Group(k), root, f.Children(k, root))
	}
	u, _ := f.Leave(1)
	fmt.Printf("after server 1 left: coordinator of group 0 is %d, %d parent edges moved, recolors %v\n",
		f.Group(0)[0], len(u.Moves), u.Recolors)
	// Output:
	// group 0 [1 4 7], coordinator 1, children of the coordinator [3 4 7]
	// group 1 [2 5], coordinator 2, children of the coordinator [3 4 5]
	// group 2 [3 6], coordinator 3, children of the coordinator [1 4 6]
	// after server 1 left: coordinator of group 0 is 7, 3 parent edges moved, recolors []
}

// Every server that replays the same committed changes gets the same forest.
func ExampleReplay() {
	changes := []forest.Change{
		{Op: forest.OpJoin, Server: 10, Addr: "a"},
		{Op: forest.OpJoin, Server: 20, Addr: "b"},
		{Op: forest.OpJoin, Server: 30, Addr: "c"},
		{Op: forest.OpLeave, Server: 10},
	}
	f, _ := forest.Replay(forest.Config{Trees: 2, MaxChildren: 2}, changes)
	fmt.Println(f.Servers(), f.GroupSizes(), f.Roots())
	// Output: [20 30] [1 1] [30 20]
}
