package gpaxostest

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// Printing. Structs (messages, hard states, statuses) print field by field,
// by name, in declaration order, leaving out every field at its zero value:
// a field added to gpaxos.Message shows up in the transcripts by itself, as
// a clear diff, without a change here.

// printReady prints every part of rd that is set, one part per block.
func (env *Env) printReady(rd gpaxos.Ready, indent string) {
	if rd.HardState != nil {
		env.printf("%sHardState %s\n", indent, env.formatStruct(reflect.ValueOf(*rd.HardState)))
	}
	if rd.Snapshot != nil {
		env.printf("%sSnapshot %s\n", indent, env.formatSnapshot(rd.Snapshot))
	}
	if rd.TruncateAfter != nil {
		env.printf("%sTruncateAfter %v\n", indent, *rd.TruncateAfter)
	}
	if len(rd.Entries) > 0 {
		env.printf("%sEntries:\n", indent)
		for _, e := range rd.Entries {
			env.printf("%s%s\n", indent, env.formatEntry(e))
		}
	}
	if len(rd.Ordered) > 0 {
		env.printf("%sOrdered:\n", indent)
		for _, e := range rd.Ordered {
			env.printf("%s%s\n", indent, env.formatEntry(e))
		}
	}
	if len(rd.Early) > 0 {
		env.printf("%sEarly:\n", indent)
		for _, m := range rd.Early {
			env.printf("%s%s\n", indent, env.formatMsg(m))
		}
	}
	if len(rd.Messages) > 0 {
		env.printf("%sMessages:\n", indent)
		for _, m := range rd.Messages {
			env.printf("%s%s\n", indent, env.formatMsg(m))
		}
	}
	if len(rd.CommittedEntries) > 0 {
		env.printf("%sCommittedEntries:\n", indent)
		for _, e := range rd.CommittedEntries {
			env.printf("%s%s\n", indent, env.formatEntry(e))
		}
	}
}

// formatMsg prints a message as "from->to Type Field:value ...".
func (env *Env) formatMsg(m gpaxos.Message) string {
	s := fmt.Sprintf("%d->%d %v", m.From, m.To, m.Type)
	m.From, m.To, m.Type = 0, 0, 0
	if f := env.formatStruct(reflect.ValueOf(m)); f != "" {
		s += " " + f
	}
	return s
}

// formatEntry prints an entry as "zxid payload".
func (env *Env) formatEntry(e gpaxos.Entry) string {
	switch e.Type {
	case gpaxos.EntryNormal:
		return fmt.Sprintf("%v %q", e.Zxid, e.Data)
	case gpaxos.EntryNoop:
		return fmt.Sprintf("%v noop", e.Zxid)
	case gpaxos.EntryConfChange:
		c, ctx, err := gpaxos.DecodeConfEntry(e.Data)
		if err != nil {
			return fmt.Sprintf("%v conf <%v>", e.Zxid, err)
		}
		s := fmt.Sprintf("%v conf %s", e.Zxid, formatConfig(c))
		if len(ctx) > 0 {
			s += fmt.Sprintf(" context=%q", ctx)
		}
		return s
	}
	return fmt.Sprintf("%v type%d %q", e.Zxid, e.Type, e.Data)
}

// formatSnapshot prints a snapshot's index, configuration and data.
func (env *Env) formatSnapshot(s *gpaxos.Snapshot) string {
	return fmt.Sprintf("{Index:%v Voters:%s Data:%q}", s.Index, formatConfig(s.Voters), s.Data)
}

// allZero reports whether f is a slice of numbers that are all zero (the
// incarnations of servers that have none): printing them adds nothing.
func allZero(f reflect.Value) bool {
	if f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Uint64 {
		return false
	}
	for i := 0; i < f.Len(); i++ {
		if f.Index(i).Uint() != 0 {
			return false
		}
	}
	return true
}

// formatConfig prints a configuration as its groups, then the registered
// incarnations: (1,2,3)(4,5,6) or (1,2,3){1:1001 2:1002}.
func formatConfig(c quorum.Config) string {
	var b strings.Builder
	for _, g := range c.Groups {
		b.WriteByte('(')
		for i, id := range g {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatUint(uint64(id), 10))
		}
		b.WriteByte(')')
	}
	if len(c.Incarnations) > 0 {
		ids := make([]ID, 0, len(c.Incarnations))
		for id := range c.Incarnations {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		b.WriteByte('{')
		for i, id := range ids {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%d:%d", id, c.Incarnations[id])
		}
		b.WriteByte('}')
	}
	return b.String()
}

// formatConfHash prints a configuration hash as the configuration the env
// knows it for, or in hex.
func (env *Env) formatConfHash(h uint64) string {
	if c, ok := env.confs[h]; ok {
		return formatConfig(c)
	}
	return fmt.Sprintf("#%x", h)
}

// formatStruct prints v's non-zero fields as "Name:value", separated by
// spaces; boolean fields print as their name alone.
func (env *Env) formatStruct(v reflect.Value) string {
	var parts []string
	t := v.Type()
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), t.Field(i).Name
		if !t.Field(i).IsExported() || f.IsZero() || allZero(f) {
			continue
		}
		if f.Kind() == reflect.Bool {
			parts = append(parts, name)
			continue
		}
		parts = append(parts, name+":"+env.formatValue(name, f))
	}
	return strings.Join(parts, " ")
}

var (
	zxidType     = reflect.TypeOf(gpaxos.Zxid(0))
	entriesType  = reflect.TypeOf([]gpaxos.Entry(nil))
	snapshotType = reflect.TypeOf((*gpaxos.Snapshot)(nil))
	idsType      = reflect.TypeOf([]ID(nil))
	configType   = reflect.TypeOf(quorum.Config{})
)

// formatValue prints one field value; name picks out configuration hashes.
func (env *Env) formatValue(name string, f reflect.Value) string {
	switch f.Type() {
	case zxidType:
		return gpaxos.Zxid(f.Uint()).String()
	case entriesType:
		ents := f.Interface().([]gpaxos.Entry)
		parts := make([]string, len(ents))
		for i, e := range ents {
			parts[i] = env.formatEntry(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case snapshotType:
		return env.formatSnapshot(f.Interface().(*gpaxos.Snapshot))
	case idsType:
		return fmt.Sprint(f.Interface())
	case configType:
		return formatConfig(f.Interface().(quorum.Config))
	}
	if f.Kind() == reflect.Uint64 && (strings.Contains(name, "Conf") || name == "ElectedUnder") {
		return env.formatConfHash(f.Uint())
	}
	if f.Kind() == reflect.Struct {
		return "{" + env.formatStruct(f) + "}"
	}
	return fmt.Sprint(f.Interface())
}

// formatStorageSummary prints the gist of a node's durable storage.
func (env *Env) formatStorageSummary(s storage) string {
	out := "HardState{" + env.formatStruct(reflect.ValueOf(s.hs)) + "}"
	if s.snap != nil {
		out += fmt.Sprintf(" snapshot %v", s.snap.Index)
	}
	if len(s.ents) > 0 {
		out += fmt.Sprintf(" entries %v..%v", s.ents[0].Zxid, s.ents[len(s.ents)-1].Zxid)
	} else {
		out += " no entries"
	}
	return out
}

// formatStatus prints one node's status line.
func (env *Env) formatStatus(nd *node) string {
	if nd.n == nil {
		return fmt.Sprintf("%d: crashed; storage %s", nd.id, env.formatStorageSummary(nd.store))
	}
	st := nd.n.Status()
	group := st.Group
	st.ID, st.Group = 0, 0
	return fmt.Sprintf("%d: group %d %s app:[%s]", nd.id, group, env.formatStruct(reflect.ValueOf(st)),
		strings.Join(nd.app.payloads, " "))
}
