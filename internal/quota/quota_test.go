package quota

import (
	"reflect"
	"testing"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"count=3,bytes=10", "count=3,bytes=10"},
		{"", "count=-1,bytes=-1"},
		// zkCli's setquota -N 2 writes what ZooKeeper's StatsTrack makes.
		{"count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2"},
		{"countHardLimit=2;count=5", "count=5,bytes=-1=;countHardLimit=2"},
		{"count=,bytes=x", "count=-1,bytes=-1"},
	} {
		if got := Parse([]byte(c.in)).String(); got != c.out {
			t.Errorf("%q: %q, want %q", c.in, got, c.out)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		limits, stats string
		count, bytes  int64
		want          []Exceeded
	}{
		{"count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2", "count=1,bytes=0", 1, 5, nil},
		{"count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2", "count=2,bytes=0", 1, 5,
			[]Exceeded{{What: "count", Hard: true, Value: 3, Limit: 2}}},
		{"count=2,bytes=4", "count=2,bytes=0", 1, 5,
			[]Exceeded{{What: "count", Value: 3, Limit: 2}, {What: "bytes", Value: 5, Limit: 4}}},
		{"count=2,bytes=-1=;byteHardLimit=4", "count=2,bytes=0", 1, 5,
			[]Exceeded{{What: "count", Value: 3, Limit: 2}, {What: "bytes", Hard: true, Value: 5, Limit: 4}}},
		{"count=-1,bytes=4", "count=9,bytes=4", 0, 0, nil},
	} {
		got := Check(Parse([]byte(c.limits)), Parse([]byte(c.stats)), c.count, c.bytes)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s with %s, +%d nodes +%d bytes: %+v, want %+v", c.limits, c.stats, c.count, c.bytes, got, c.want)
		}
	}
}
