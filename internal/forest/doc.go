// Package forest is Giraffe's group assignment: t interior-node-disjoint
// trees over the same servers (the Giraffe paper's §III-A, Algorithms 1 and
// 2), whose colors are Group Paxos's voting groups, listed in heap order
// (coordinator first), and the limits every operation on them keeps. It is
// pure: no I/O, no clock, no randomness; the same ordered list of Changes
// gives the same Forest on every server (Replay), so the groups can be
// derived from committed membership entries instead of being sent around,
// and a Snapshot rebuilds the forest exactly.
//
// The forest decides which servers vote in which group, not how messages
// travel: Group Paxos relays a group's entries down a tree of the group's
// own members (gpaxos.TreeTopology), which has the shape of the core of the
// group's tree here. The paper also sends every message down all t trees,
// so that any t-1 crashes leave every live server one whole tree; that rule
// survives in this package's tests, which check the resilience the
// construction promises, and docs/protocol.md gives the measurements for
// which Giraffe does not disseminate that way.
//
// # Vocabulary and identifiers
//
// A Config is the paper's "t-c": t trees (MaxColorNum) and at most c children
// per server per tree (MaxChildrenSize). Servers are named by ServerID, a
// uint32 (the operator's myid; None is reserved). Each server has a Color in
// [0,t): the servers of color k are group k, and tree k is the tree of color
// k. The root of tree k is group k's coordinator in Group Paxos; Group(k)
// lists the group with the coordinator first. Classic mode (one leader
// talking to everyone) is 1-(N-1), a single star.
//
// # The construction
//
// In tree k the servers of color k (the core) form an implicit c-ary heap:
// Group(k)[0] is the root and Group(k)[p] hangs below Group(k)[(p-1)/c].
// Every other server (foreign to tree k) hangs below the shallowest core
// server that has room (lowest heap position). Only when every core server
// already has c children does a foreign server take children ("overflow",
// below). A join takes the color of the smallest group (lowest color on a
// tie), enters its own tree at the next heap position and every other tree
// as a foreign leaf. A departure is replaced in its own tree by the last
// server of the heap; the other trees just lose a leaf.
//
// # Choices where the paper is ambiguous or wrong
//
//  1. "The least height or descendants" (Alg. 1 line 17; Alg. 2 lines 2
//     and 6) does not say which criterion wins or how ties break, and a greedy
//     descent by either does not find a free place of the right color when
//     one exists elsewhere. The heap position replaces both: it is the
//     shallowest place in the core by construction, and it makes the height
//     bound below provable. Every remaining tie breaks on the lowest id.
//  2. Alg. 1 line 17, "select a node which does not belong to the color
//     set", read literally descends into a foreign subtree and makes a
//     foreign server interior. We read it as the displacement it must be:
//     when the new core server's heap parent is full, the new server takes
//     the place of one foreign child of that parent (fewest descendants, then
//     lowest id), and that child is placed again as a foreign server.
//  3. Alg. 1 lines 3-11 (first server of color k when the root of tree k is
//     foreign): kept, the new server becomes the root above the old one.
//     Instead of moving up to c-1 of the old root's children by hand, the
//     general overflow rule below pulls them under the new root.
//  4. Alg. 2 (POP_ROOT) replaces the departed server by its child with "the
//     most height or descendants" and recursively rebuilds that child's
//     subtree. In tree k that child may be a foreign leaf, which the
//     replacement would make interior (breaking disjointness); the recursion
//     is local, so it cannot re-home the departed server's foreign children
//     when the capacity they need is elsewhere; and it lets the core drift
//     out of balance. Its recursive call also drops an argument (line 8,
//     POP_ROOT(n.color)). We replace the departed core server by the last
//     server of the heap (which has no core children): it inherits the
//     departed server's core children (fixed by the heap), keeps as many of
//     its own foreign children as still fit, and the rest are placed again.
//     POP_ROOT's rule survives only where it is safe: when a foreign root
//     leaves a tree whose group is empty, the orphan with the greatest
//     height, then most descendants, then lowest id becomes the root.
//  5. The paper hands out colors only at registration and says nothing about
//     departures, which can leave the groups two apart. When a departure
//     would, the last server of the largest group (lowest color on a tie)
//     changes color and takes the departed server's heap position directly
//     (Update.Recolors). For Group Paxos a recolor moves a voter between
//     groups, which is a configuration change in its own right.
//  6. Dissemination (the tests' rule): the paper forwards a copy tagged k
//     only at servers of color k. That equals "forward in tree k" while the
//     forest is disjoint, but strands subtrees below foreign interior
//     servers otherwise. The tests forward in the tree of the tag, whoever
//     the forwarder (reach_test.go).
//  7. Capacity. The paper's S_max = t(1+c+c²) (PaperCapacity) is a statement
//     about height (three levels), not about disjointness: tree k must hang
//     n-1 servers below the g_k servers of color k, so disjointness needs
//     n-1 <= c·g_k for the smallest group g = floor(n/t), and this is also
//     sufficient (Config.Disjoint). With c > t it holds for every n >= t;
//     with c = t only when n mod t is 0 or 1 (3-3 is not disjoint at n = 5,
//     9-9 not at n = 105, both far below S_max); with c < t-1 never. Below t
//     servers some group is empty and its tree has a foreign root. So the
//     invariant "interior only in the tree of its own color" is stated and
//     tested for Config.Disjoint(n), not for n <= S_max.
//
// # Beyond disjointness
//
// When Disjoint(n) is false and group k is non-empty, exactly
// Config.Overflow(n, g_k) = n-1-c·g_k servers of tree k hang below foreign
// servers ("hosts"), and only while every core server has c children. With
// t <= c the overflow is below c, it hangs below a single host, and the host
// is chosen among servers interior nowhere else, so each server is interior
// in at most two trees: a message down all trees then survives any
// floor((t-1)/2) crashes (and no longer all t-1: the tests count the sets
// that fail). With n < t every server is the root of its own tree and gets
// its own copy first-hand. With t > c most servers must be interior in some
// foreign tree; hosts are then filled breadth-first to keep the trees low,
// and no disjointness or resilience beyond a single crash is promised.
//
// # Height
//
// For n >= t and t <= c, tree k is at most Config.HeightBound(n, g_k) high:
// CoreDepth(g_k), plus 1 for the foreign leaves (unless t = 1), plus 1 if
// the tree overflows, where CoreDepth(g) = floor(log_c((g-1)(c-1)+1)) for
// c >= 2 is the depth of the last heap position. With g = ceil(n/t) that is
// about log_c(n/t)+1: 3 for 9-9 at the paper's 819 servers, 4 for 9-9 at
// 1,000, 1 for a classic star.
//
// # Edges moved per change
//
// Update.Moves lists the parent edges a change moved among the servers
// present before and after. For t <= c (every configuration of the paper):
//
//   - a join moves at most max(1, t-1) edges: in its own tree, one displaced
//     foreign child, plus the overflow of that tree (at most t-2 servers),
//     which the new core server's room takes back; elsewhere it is a new
//     leaf;
//   - a departure moves at most 3c+4t: in its own tree the departed server's
//     children (c), the replacement (1) and the replacement's foreign
//     children that no longer fit (c); in each other tree one overflow server
//     into the freed place; if the departed server hosted overflow, its
//     overflow children (t-2); on a recolor, the moved server's foreign
//     children in its old tree (c) and the overflow it hosted (t-2).
//
// A star's root departure moves all n-1 edges, which is inherent. The tests
// check these bounds on every change and report the measured maxima and
// means (docs/forest.md).
package forest
