// Package nsmap is the table of namespaces: which top-level znodes are
// declared as namespaces, with which consistency level, and which
// namespace a path belongs to.
//
// A namespace is a top-level znode (its root, "/NAME") and everything under
// it, declared in zoo.cfg as giraffe.namespace.NAME=strong|weak. Every path
// no declared namespace holds ("/", "/zookeeper", undeclared top-level
// names) belongs to the default namespace, which is strong. A Table is
// equal on every member of an ensemble: its canonical encoding (Encode, the
// JSON object clients read at /zookeeper/namespaces) and its Hash identify
// it.
package nsmap

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// Level is a namespace's consistency level.
type Level uint8

// The levels. The zero Level is Strong, so that anything not declared
// otherwise is strong.
const (
	Strong Level = iota
	Weak
)

// ParseLevel reads a level as zoo.cfg and the table's encoding write it.
func ParseLevel(s string) (Level, error) {
	switch s {
	case "strong":
		return Strong, nil
	case "weak":
		return Weak, nil
	}
	return Strong, fmt.Errorf("level %q: must be strong or weak", s)
}

// String returns "strong" or "weak".
func (l Level) String() string {
	if l == Weak {
		return "weak"
	}
	return "strong"
}

// ZnodePath is where the table is published to clients: a read-only znode
// whose data is Encode's JSON.
const ZnodePath = "/zookeeper/namespaces"

// MaxNamespaces bounds how many namespaces a table declares. With the
// default namespace that makes 64, so a set of namespaces fits in one
// 64-bit word.
const MaxNamespaces = 63

// Namespace is one namespace: the name of its root znode ("" for the
// default namespace) and its level.
type Namespace struct {
	Name  string
	Level Level
}

// Default is the namespace of every path that no declared namespace holds.
var Default = Namespace{Level: Strong}

// Root returns the path of the namespace's root znode ("/" for the default
// namespace).
func (n Namespace) Root() string { return "/" + n.Name }

// ValidName reports why name cannot be a namespace, or nil: it must be one
// valid ZooKeeper path component (no '/', not "." or "..", no control
// characters) and not "zookeeper", the system subtree.
func ValidName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("namespace name is empty")
	case strings.Contains(name, "/"):
		return fmt.Errorf("namespace name %q contains '/': a namespace is one top-level znode", name)
	case name == "zookeeper":
		return fmt.Errorf("namespace name %q is the system subtree", name)
	}
	if err := zkproto.ValidatePath("/"+name, false); err != nil {
		return fmt.Errorf("namespace name %q: %v", name, err)
	}
	return nil
}

// Table is a set of declared namespaces. The zero Table declares none.
// Copies of a Table are independent: Declare never changes what another
// copy sees.
type Table struct {
	ns []Namespace // sorted by name, names unique
}

// Declare adds namespace name at level, or changes the level of a name
// already declared (a later zoo.cfg line wins, as for every key).
func (t *Table) Declare(name string, level Level) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if level != Strong && level != Weak {
		return fmt.Errorf("namespace %q: unknown level %d", name, level)
	}
	i, found := t.search(name)
	ns := slices.Clone(t.ns)
	if found {
		ns[i].Level = level
	} else {
		if len(ns) >= MaxNamespaces {
			return fmt.Errorf("namespace %q: at most %d namespaces can be declared", name, MaxNamespaces)
		}
		ns = slices.Insert(ns, i, Namespace{Name: name, Level: level})
	}
	t.ns = ns
	return nil
}

func (t Table) search(name string) (int, bool) {
	return slices.BinarySearchFunc(t.ns, name, func(n Namespace, name string) int { return strings.Compare(n.Name, name) })
}

// Len returns how many namespaces are declared.
func (t Table) Len() int { return len(t.ns) }

// Namespaces returns the declared namespaces, sorted by name.
func (t Table) Namespaces() []Namespace { return slices.Clone(t.ns) }

// Lookup returns the namespace declared as name.
func (t Table) Lookup(name string) (Namespace, bool) {
	i, found := t.search(name)
	if !found {
		return Namespace{}, false
	}
	return t.ns[i], true
}

// Classify returns the namespace path belongs to: the declared namespace
// whose root is path's first component, or Default. path is a ZooKeeper
// path ("/a/b"); Classify does not validate it.
func (t Table) Classify(path string) Namespace {
	if len(t.ns) == 0 || len(path) < 2 || path[0] != '/' {
		return Default
	}
	name := path[1:]
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name = name[:i]
	}
	if n, ok := t.Lookup(name); ok {
		return n
	}
	return Default
}

// IsRoot reports whether path is the root znode of a declared namespace.
func (t Table) IsRoot(path string) bool {
	if len(path) < 2 || path[0] != '/' || strings.IndexByte(path[1:], '/') >= 0 {
		return false
	}
	_, found := t.search(path[1:])
	return found
}

// Equal reports whether t and u declare the same namespaces at the same
// levels.
func (t Table) Equal(u Table) bool { return slices.Equal(t.ns, u.ns) }

// Encode returns the table's canonical encoding: a JSON object from names
// to levels, keys sorted, no spaces ({"1":"strong","2":"weak"}; {} for the
// empty table). Equal tables have equal encodings.
func (t Table) Encode() []byte {
	m := make(map[string]string, len(t.ns))
	for _, n := range t.ns {
		m[n.Name] = n.Level.String()
	}
	b, err := json.Marshal(m) // encoding/json sorts map keys
	if err != nil {
		panic(fmt.Sprintf("nsmap: encoding a table of strings: %v", err))
	}
	return b
}

// Decode reads a table from Encode's format (any JSON object from names to
// levels), checking every name and level as Declare does.
func Decode(b []byte) (Table, error) {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return Table{}, fmt.Errorf("namespace table: %w", err)
	}
	if m == nil {
		return Table{}, fmt.Errorf("namespace table: not a JSON object")
	}
	var t Table
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		level, err := ParseLevel(m[name])
		if err != nil {
			return Table{}, fmt.Errorf("namespace %q: %w", name, err)
		}
		if err := t.Declare(name, level); err != nil {
			return Table{}, err
		}
	}
	return t, nil
}

// Hash identifies the table: the first 8 bytes of the SHA-256 of its
// encoding, 0 for the empty table (and never 0 for another).
func (t Table) Hash() uint64 {
	if len(t.ns) == 0 {
		return 0
	}
	sum := sha256.Sum256(t.Encode())
	if h := binary.BigEndian.Uint64(sum[:8]); h != 0 {
		return h
	}
	return 1
}

// String describes the table for log lines: "1=strong,2=weak", or "none".
func (t Table) String() string {
	if len(t.ns) == 0 {
		return "none"
	}
	parts := make([]string, len(t.ns))
	for i, n := range t.ns {
		parts[i] = n.Name + "=" + n.Level.String()
	}
	return strings.Join(parts, ",")
}

// Bit is the namespace's bit in a mask of namespaces (log records carry
// one, naming the namespaces they change): bit 0 for the default
// namespace, and for a declared one a bit from 1 to 63 drawn from a hash
// of its name, so that a record's mask means the same whatever else the
// table declares when it is read. Two names may share a bit; a mask then
// names both, which errs on the side of the namespaces a damaged record
// might have changed.
func Bit(n Namespace) uint64 {
	if n.Name == "" {
		return 1
	}
	h := fnv.New64a()
	h.Write([]byte(n.Name))
	return 1 << (1 + h.Sum64()%MaxNamespaces)
}

// AllBits is the mask of a record that may change any namespace.
const AllBits = ^uint64(0)

// InMask returns the declared namespaces whose bit mask holds, and whether
// it holds the default namespace's.
func (t Table) InMask(mask uint64) (ns []Namespace, withDefault bool) {
	for _, n := range t.ns {
		if mask&Bit(n) != 0 {
			ns = append(ns, n)
		}
	}
	return ns, mask&Bit(Default) != 0
}
