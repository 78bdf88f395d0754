package forest

import "fmt"

// Limits on a Config. MaxTrees is bounded by the 64-bit masks the forest and
// the dissemination receiver keep per server; MaxChildrenLimit only guards
// against absurd input (a star over every server of an ensemble is far below
// it).
const (
	MaxTrees         = 64
	MaxChildrenLimit = 1 << 20
	// MaxAddrLen bounds a server address carried in a Change or Snapshot.
	MaxAddrLen = 1024
)

// Config is the shape of a forest, fixed for its lifetime: the paper's
// MAX_COLOR_NUM (Trees, written t) and MAX_CHILDREN_SIZE (MaxChildren,
// written c). The paper writes a configuration as "t-c"; classic mode, a
// single star, is 1-(N-1).
type Config struct {
	Trees       int // t: number of trees, colors and groups, 1..MaxTrees
	MaxChildren int // c: most children a server may have in one tree, 1..MaxChildrenLimit
}

// Validate reports whether c is a usable configuration.
func (c Config) Validate() error {
	if c.Trees < 1 || c.Trees > MaxTrees {
		return fmt.Errorf("forest: trees must be in [1,%d], got %d", MaxTrees, c.Trees)
	}
	if c.MaxChildren < 1 || c.MaxChildren > MaxChildrenLimit {
		return fmt.Errorf("forest: max children must be in [1,%d], got %d", MaxChildrenLimit, c.MaxChildren)
	}
	return nil
}

// String formats c the way the paper does, "t-c".
func (c Config) String() string { return fmt.Sprintf("%d-%d", c.Trees, c.MaxChildren) }

// PaperCapacity is the paper's S_max = t(1+c+c²): the largest ensemble whose
// groups, laid out as complete c-ary trees, have at most three levels. It is
// a statement about height only; see Disjoint for when interior-node
// disjointness is possible at all.
func (c Config) PaperCapacity() int {
	return c.Trees * (1 + c.MaxChildren + c.MaxChildren*c.MaxChildren)
}

// GroupSizes returns the sizes of the t groups of an n-server forest in
// ascending order: n mod t groups have one server more than the others.
// Balanced groups (sizes within one) force exactly these sizes; which colors
// hold the larger groups depends on the history of joins and departures.
func (c Config) GroupSizes(n int) []int {
	sizes := make([]int, c.Trees)
	for k := range sizes {
		sizes[k] = n / c.Trees
		if k >= c.Trees-n%c.Trees {
			sizes[k]++
		}
	}
	return sizes
}

// Disjoint reports whether an n-server forest can be interior-node-disjoint
// (every server has children only in the tree of its own color) with groups
// balanced within one and at most c children per server.
//
// Tree k holds all n servers, and only its g_k servers of color k may have
// children, each at most c, so n-1 <= c·g_k is necessary; with the smallest
// group g = floor(n/t) it is also sufficient (the construction achieves it).
// For n < t some group is empty and its tree has a foreign interior server
// as soon as n >= 2. For c > t the condition holds for every n >= t; for
// c = t exactly when n mod t is 0 or 1; for c < t-1 never (n >= 2). The
// paper's PaperCapacity does not enter: 3-3 cannot be disjoint at n = 5.
func (c Config) Disjoint(n int) bool {
	if n <= 1 {
		return true
	}
	return (n/c.Trees)*c.MaxChildren >= n-1
}

// Overflow returns how many servers of an n-server forest cannot hang below a
// server of color k in tree k when group k has g servers: max(0, n-1-c·g)
// (n-1 when g is 0). The construction places exactly this many servers below
// foreign servers in tree k.
func (c Config) Overflow(n, g int) int {
	if n <= 1 {
		return 0
	}
	if g == 0 {
		return n - 1
	}
	return max(0, n-1-c.MaxChildren*g)
}

// CoreDepth returns the depth of the deepest server of a group of g servers
// laid out as the implicit c-ary heap the construction uses: position p has
// its parent at (p-1)/c, so the last position g-1 sits at depth
// floor(log_c((g-1)(c-1)+1)) for c >= 2 and g-1 for c = 1. It is 0 for g <= 1.
func (c Config) CoreDepth(g int) int {
	if g <= 1 {
		return 0
	}
	d := 0
	for p := g - 1; p > 0; p = (p - 1) / c.MaxChildren {
		d++
	}
	return d
}

// HeightBound returns the height the construction guarantees for a tree of an
// n-server forest whose group has g servers, whenever n >= t and t <= c:
// CoreDepth(g), plus one level for the foreign servers below the core when
// there are any (n > g, so always but in classic mode), plus one more when
// the tree overflows (Overflow > 0), because overflow servers hang below a
// single foreign server that itself hangs below the core. For n < t it
// returns the trivial bound n-1. For t > c no logarithmic bound is promised
// (most servers overflow); it returns n-1 there too and the tests only
// measure.
func (c Config) HeightBound(n, g int) int {
	if n <= 1 {
		return 0
	}
	if n < c.Trees || c.Trees > c.MaxChildren {
		return n - 1
	}
	h := c.CoreDepth(g)
	if n > g {
		h++
	}
	if c.Overflow(n, g) > 0 {
		h++
	}
	return min(h, n-1)
}
