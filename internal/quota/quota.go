// Package quota is ZooKeeper 3.7+'s quota records as pure data: the
// key=value lists stored in /zookeeper/quota/<path>/zookeeper_limits (the
// limits a client sets with setquota) and zookeeper_stats (the live count
// of nodes and bytes of data the server keeps under <path>), in
// ZooKeeper's StatsTrack text format, and the paths of those nodes
// (Quotas.java).
package quota

import (
	"slices"
	"strconv"
	"strings"
)

// Paths and node names of ZooKeeper's quota subtree.
const (
	Root      = "/zookeeper/quota"
	LimitNode = "zookeeper_limits"
	StatNode  = "zookeeper_stats"
)

// The keys of a record. Count and Bytes are the soft limits in a limits
// node and the live figures in a stats node; the hard limits exist in
// limits nodes only.
const (
	KeyCount          = "count"
	KeyBytes          = "bytes"
	KeyCountHardLimit = "countHardLimit"
	KeyByteHardLimit  = "byteHardLimit"
)

// LimitPath is the limits node of quota root p.
func LimitPath(p string) string { return Root + p + "/" + LimitNode }

// StatPath is the stats node of quota root p.
func StatPath(p string) string { return Root + p + "/" + StatNode }

// Stats is one record: key to value, -1 for a key that is absent.
type Stats map[string]int64

// Parse reads a record as ZooKeeper's StatsTrack does: key=value pairs
// separated by ',' or ';' (runs of them count as one), a value left empty
// meaning -1. A value that is not a number is skipped, so the key reads
// as absent (ZooKeeper would fail on it).
func Parse(data []byte) Stats {
	s := Stats{}
	for _, pair := range strings.FieldsFunc(string(data), func(r rune) bool { return r == ',' || r == ';' }) {
		kv := strings.Split(pair, "=")
		if len(kv) < 2 {
			continue
		}
		if kv[1] == "" {
			s[kv[0]] = -1
			continue
		}
		if v, err := strconv.ParseInt(kv[1], 10, 64); err == nil {
			s[kv[0]] = v
		}
	}
	return s
}

// Get returns key's value, -1 when absent.
func (s Stats) Get(key string) int64 {
	if v, ok := s[key]; ok {
		return v
	}
	return -1
}

// String writes the record as StatsTrack.toString: count and bytes first,
// separated by ',' (what ZooKeeper 3.4 parsed), then, when there are
// other keys, a '=' that old parsers ignore and the others in key order,
// each behind ';'. A stats node reads "count=3,bytes=10"; a limits node
// with a hard count limit "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2".
func (s Stats) String() string {
	var b strings.Builder
	b.WriteString("count=" + strconv.FormatInt(s.Get(KeyCount), 10))
	b.WriteString(",bytes=" + strconv.FormatInt(s.Get(KeyBytes), 10))
	var rest []string
	for k := range s {
		if k != KeyCount && k != KeyBytes {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		b.WriteByte('=')
		slices.Sort(rest)
		for _, k := range rest {
			b.WriteString(";" + k + "=" + strconv.FormatInt(s[k], 10))
		}
	}
	return b.String()
}

// Exceeded is the outcome of checking a change against a limits record.
type Exceeded struct {
	// What is "count" or "bytes"; empty when no limit is exceeded.
	What string
	// Hard says the limit exceeded is a hard one (the change is refused
	// when quotas are enforced); otherwise it is a soft one (logged).
	Hard bool
	// Value is the figure the change would make, Limit the limit.
	Value, Limit int64
}

// Check decides, as ZooKeeperServer.checkQuota, which limits of a
// limits record adding countDiff nodes and bytesDiff bytes to a subtree
// whose stats record is stats exceeds, count first: a hard limit, when
// set (not -1), takes the place of the soft one, and a change of zero is
// not checked. The caller logs the soft ones and refuses the change at
// the first hard one, as ZooKeeper does.
func Check(limits, stats Stats, countDiff, bytesDiff int64) []Exceeded {
	var out []Exceeded
	for _, c := range []struct {
		what       string
		diff       int64
		soft, hard string
	}{{KeyCount, countDiff, KeyCount, KeyCountHardLimit}, {KeyBytes, bytesDiff, KeyBytes, KeyByteHardLimit}} {
		if c.diff == 0 || limits.Get(c.soft) < 0 && limits.Get(c.hard) < 0 {
			continue
		}
		v := stats.Get(c.what) + c.diff
		e := Exceeded{What: c.what, Hard: limits.Get(c.hard) > -1, Value: v, Limit: limits.Get(c.soft)}
		if e.Hard {
			e.Limit = limits.Get(c.hard)
		}
		if v > e.Limit {
			out = append(out, e)
			if e.Hard {
				break
			}
		}
	}
	return out
}
