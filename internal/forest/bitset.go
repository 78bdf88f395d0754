package forest

import "math/bits"

// bitset is a growable set of small non-negative integers with a fast
// smallest-member query. The forest keeps one per tree over core positions
// that still have room for a child, so that "the shallowest core server with
// room" costs a few word scans instead of a walk over the group.
type bitset struct {
	words []uint64
}

func (b *bitset) set(i int, on bool) {
	w := i / 64
	if on {
		for len(b.words) <= w {
			b.words = append(b.words, 0)
		}
		b.words[w] |= 1 << (uint(i) % 64)
		return
	}
	if w < len(b.words) {
		b.words[w] &^= 1 << (uint(i) % 64)
	}
}

func (b *bitset) has(i int) bool {
	w := i / 64
	return w < len(b.words) && b.words[w]&(1<<(uint(i)%64)) != 0
}

// first returns the smallest member, or -1 if the set is empty.
func (b *bitset) first() int {
	for w, x := range b.words {
		if x != 0 {
			return w*64 + bits.TrailingZeros64(x)
		}
	}
	return -1
}

func (b *bitset) clone() bitset {
	return bitset{words: append([]uint64(nil), b.words...)}
}
