package sim

import (
	"math"
	"math/rand"
)

// network is the simulated network: a delay distribution, a loss rate, a
// duplication rate, and a set of blocked directed links (partitions).
type network struct {
	dist      string
	minUS     int64
	meanUS    int64
	drop      float64
	dup       float64 // probability that a message is delivered twice
	n         int
	block     []bool // block[from*n+to]
	nBlocked  int
	slowUntil int64 // while now < slowUntil, delays are ten times longer
	now       func() int64
}

func newNetwork(p Params, now func() int64) *network {
	return &network{dist: p.DelayDist, minUS: p.DelayMinUS, meanUS: p.DelayMeanUS, drop: p.DropProb, dup: p.DupProb, n: p.Nodes + p.Spares, now: now}
}

// delay samples one message delay in µs.
func (nw *network) delay(r *rand.Rand) int64 {
	spread := float64(nw.meanUS - nw.minUS)
	var d float64
	switch nw.dist {
	case "exponential":
		d = r.ExpFloat64() * spread
	case "bimodal":
		// Mostly fast, sometimes very slow: reorders messages hard.
		if r.Intn(10) == 0 {
			d = spread * (5 + 5*r.Float64())
		} else {
			d = spread * 0.2 * r.Float64()
		}
	default:
		d = 2 * spread * r.Float64()
	}
	d = math.Min(d, 200_000)
	out := nw.minUS + int64(d)
	if nw.now() < nw.slowUntil {
		out *= 10
	}
	return out
}

func (nw *network) blocked(from, to int) bool {
	return nw.nBlocked > 0 && nw.block[from*nw.n+to]
}

func (nw *network) setBlock(from, to int, on bool) {
	if nw.block == nil {
		nw.block = make([]bool, nw.n*nw.n)
	}
	if nw.block[from*nw.n+to] != on {
		nw.block[from*nw.n+to] = on
		if on {
			nw.nBlocked++
		} else {
			nw.nBlocked--
		}
	}
}

// heal removes every partition.
func (nw *network) heal() {
	for i := range nw.block {
		nw.block[i] = false
	}
	nw.nBlocked = 0
}

// split blocks every link between side A (in[i]) and side B; one way only
// when oneWay (A cannot reach B, B still reaches A).
func (nw *network) split(in []bool, oneWay bool) {
	for i := 0; i < nw.n; i++ {
		for j := 0; j < nw.n; j++ {
			if in[i] && !in[j] {
				nw.setBlock(i, j, true)
				if !oneWay {
					nw.setBlock(j, i, true)
				}
			}
		}
	}
}
