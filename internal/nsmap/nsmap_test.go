package nsmap

import (
	"fmt"
	"strings"
	"testing"
)

func paperTable(t *testing.T) Table {
	t.Helper()
	var tab Table
	if err := tab.Declare("2", Weak); err != nil {
		t.Fatal(err)
	}
	if err := tab.Declare("1", Strong); err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestClassify(t *testing.T) {
	tab := paperTable(t)
	tests := []struct {
		path string
		want Namespace
	}{
		{"/", Default},
		{"/zookeeper", Default},
		{"/zookeeper/config", Default},
		{"/1", Namespace{Name: "1", Level: Strong}},
		{"/1/a/b", Namespace{Name: "1", Level: Strong}},
		{"/2", Namespace{Name: "2", Level: Weak}},
		{"/2/x", Namespace{Name: "2", Level: Weak}},
		{"/22", Default},  // a longer name is another znode
		{"/3/x", Default}, // undeclared
		{"", Default},
		{"2", Default}, // not a path
	}
	for _, tt := range tests {
		if got := tab.Classify(tt.path); got != tt.want {
			t.Errorf("Classify(%q) = %+v, want %+v", tt.path, got, tt.want)
		}
	}
	var none Table
	if got := none.Classify("/2/x"); got != Default {
		t.Errorf("empty table: Classify = %+v", got)
	}
}

func TestIsRoot(t *testing.T) {
	tab := paperTable(t)
	for path, want := range map[string]bool{
		"/1": true, "/2": true, "/2/x": false, "/": false, "/3": false, "/zookeeper": false, "": false, "/2/": false,
	} {
		if got := tab.IsRoot(path); got != want {
			t.Errorf("IsRoot(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestDeclareRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", "a/b", "/a", "zookeeper", ".", "..", "a\x00b", "a\x01"} {
		var tab Table
		if err := tab.Declare(name, Strong); err == nil {
			t.Errorf("Declare(%q) accepted", name)
		}
	}
	for _, name := range []string{"1", "weak-things", "a.b", "...", "zookeeper2", "é"} {
		var tab Table
		if err := tab.Declare(name, Weak); err != nil {
			t.Errorf("Declare(%q): %v", name, err)
		}
	}
	var tab Table
	if err := tab.Declare("x", Level(7)); err == nil {
		t.Error("an unknown level was accepted")
	}
}

func TestDeclareLaterWinsAndCopiesAreIndependent(t *testing.T) {
	tab := paperTable(t)
	copied := tab
	if err := tab.Declare("2", Strong); err != nil {
		t.Fatal(err)
	}
	if n, _ := tab.Lookup("2"); n.Level != Strong {
		t.Fatalf("redeclared level not taken: %+v", n)
	}
	if n, _ := copied.Lookup("2"); n.Level != Weak {
		t.Fatalf("a copy changed with the original: %+v", n)
	}
	if tab.Len() != 2 {
		t.Fatalf("Len = %d", tab.Len())
	}
}

func TestDeclareBound(t *testing.T) {
	var tab Table
	for i := range MaxNamespaces {
		if err := tab.Declare(strings.Repeat("n", i+1), Strong); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Declare("one-too-many", Strong); err == nil {
		t.Fatal("a table over MaxNamespaces was accepted")
	}
	if err := tab.Declare("n", Weak); err != nil {
		t.Fatalf("redeclaring a name of a full table: %v", err)
	}
}

func TestParseLevel(t *testing.T) {
	for s, want := range map[string]Level{"strong": Strong, "weak": Weak} {
		got, err := ParseLevel(s)
		if err != nil || got != want || got.String() != s {
			t.Errorf("ParseLevel(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "Strong", "eventual", "weak "} {
		if _, err := ParseLevel(s); err == nil {
			t.Errorf("ParseLevel(%q) accepted", s)
		}
	}
}

func TestEncodingIsCanonical(t *testing.T) {
	tab := paperTable(t)
	if got, want := string(tab.Encode()), `{"1":"strong","2":"weak"}`; got != want {
		t.Fatalf("Encode = %s, want %s", got, want)
	}
	var none Table
	if got := string(none.Encode()); got != "{}" {
		t.Fatalf("empty table encodes as %s", got)
	}
	// Declaration order does not matter.
	var other Table
	other.Declare("1", Strong)
	other.Declare("2", Weak)
	if string(other.Encode()) != string(tab.Encode()) || other.Hash() != tab.Hash() || !other.Equal(tab) {
		t.Fatal("equal tables encode or hash differently")
	}
	back, err := Decode([]byte(` { "2" : "weak", "1": "strong" } `))
	if err != nil || !back.Equal(tab) {
		t.Fatalf("Decode = %v, %v", back, err)
	}
	if tab.String() != "1=strong,2=weak" || none.String() != "none" {
		t.Fatalf("String: %q, %q", tab.String(), none.String())
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, in := range []string{``, `null`, `[]`, `{"1":"eventual"}`, `{"a/b":"weak"}`, `{"zookeeper":"strong"}`, `{"1":1}`, `{"1":"strong"`} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%s) accepted", in)
		}
	}
}

func TestHash(t *testing.T) {
	var none Table
	if none.Hash() != 0 {
		t.Fatal("the empty table must hash to 0")
	}
	tab := paperTable(t)
	weakOne := paperTable(t)
	weakOne.Declare("1", Weak)
	if tab.Hash() == 0 || tab.Hash() == weakOne.Hash() {
		t.Fatalf("hashes: %x %x", tab.Hash(), weakOne.Hash())
	}
}

// TestBitsNameNamespacesInMasks checks that a mask built from namespaces'
// bits names them again, the default namespace apart, whatever else the
// table declares.
func TestBitsNameNamespacesInMasks(t *testing.T) {
	var small, big Table
	for _, n := range []string{"1", "2"} {
		if err := small.Declare(n, Strong); err != nil {
			t.Fatal(err)
		}
	}
	for i := range MaxNamespaces {
		if err := big.Declare(fmt.Sprint(i), Weak); err != nil {
			t.Fatal(err)
		}
	}
	two, _ := small.Lookup("2")
	if Bit(Default) != 1 {
		t.Fatalf("default bit %#x", Bit(Default))
	}
	if b := Bit(two); b <= 1 || b&(b-1) != 0 {
		t.Fatalf("bit of /2 is %#x, want one bit above bit 0", b)
	}
	ns, def := small.InMask(Bit(two))
	if def || len(ns) != 1 || ns[0].Name != "2" {
		t.Fatalf("InMask(bit of /2) = %v, %v", ns, def)
	}
	// The bit depends on the name alone.
	ns, _ = big.InMask(Bit(Namespace{Name: "2"}))
	found := false
	for _, n := range ns {
		found = found || n.Name == "2"
	}
	if !found {
		t.Fatalf("/2's bit does not name /2 in a larger table: %v", ns)
	}
	if ns, def := small.InMask(AllBits); !def || len(ns) != 2 {
		t.Fatalf("InMask(AllBits) = %v, %v", ns, def)
	}
	if ns, def := small.InMask(0); def || len(ns) != 0 {
		t.Fatalf("InMask(0) = %v, %v", ns, def)
	}
}
