package shell

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/recipes"
	"github.com/giraffe-coord/giraffe/zkproto"
)

func (s *Shell) ls(ctx context.Context, a *args) error {
	withStat, recursive := a.flag("s"), a.flag("R")
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	if recursive {
		return s.walk(ctx, w[0], func(p string) { s.printf("%s\n", p) })
	}
	kids, st, err := s.conn.Children(ctx, w[0])
	if err != nil {
		return err
	}
	slices.Sort(kids)
	s.printf("[%s]\n", strings.Join(kids, ", "))
	if withStat {
		s.printStat(st)
	}
	return nil
}

// walk visits path and its descendants, parents first.
func (s *Shell) walk(ctx context.Context, path string, visit func(string)) error {
	visit(path)
	kids, _, err := s.conn.Children(ctx, path)
	if errors.Is(err, zkproto.ErrNoNode) && path != "/" {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	slices.Sort(kids)
	for _, k := range kids {
		if err := s.walk(ctx, join(path, k), visit); err != nil {
			return err
		}
	}
	return nil
}

func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

func (s *Shell) get(ctx context.Context, a *args) error {
	withStat, watch := a.flag("s"), a.flag("w")
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	var data []byte
	var st *zkproto.Stat
	if watch {
		var ev <-chan client.Event
		data, st, ev, err = s.conn.GetW(ctx, w[0])
		if err == nil {
			s.printWatch(ev)
		}
	} else {
		data, st, err = s.conn.Get(ctx, w[0])
	}
	if err != nil {
		return err
	}
	if data == nil {
		s.printf("null\n")
	} else {
		s.printf("%s\n", data)
	}
	if withStat {
		s.printStat(st)
	}
	return nil
}

func (s *Shell) set(ctx context.Context, a *args) error {
	v, err := a.version()
	if err != nil {
		return err
	}
	w, err := a.positional(2, 2)
	if err != nil {
		return err
	}
	_, err = s.conn.Set(ctx, w[0], []byte(w[1]), v)
	return err
}

func (s *Shell) create(ctx context.Context, a *args) error {
	eph, seq, container := a.flag("e"), a.flag("s"), a.flag("c")
	ttlText, err := a.value("t", "")
	if err != nil {
		return err
	}
	w, err := a.positional(1, 3)
	if err != nil {
		return err
	}
	var data []byte
	if len(w) > 1 {
		data = []byte(w[1])
	}
	acl := zkproto.OpenACLUnsafe
	if len(w) > 2 {
		if acl, err = ParseACL(w[2]); err != nil {
			return err
		}
	}
	mode := client.Persistent
	switch {
	case container && (eph || seq || ttlText != ""):
		return fmt.Errorf("%w: -c excludes -e, -s and -t", errUsage)
	case container:
		mode = client.Container
	case ttlText != "" && eph:
		return fmt.Errorf("%w: -t excludes -e", errUsage)
	case ttlText != "" && seq:
		mode = client.PersistentSequentialTTL
	case ttlText != "":
		mode = client.PersistentTTL
	case eph && seq:
		mode = client.EphemeralSequential
	case eph:
		mode = client.Ephemeral
	case seq:
		mode = client.PersistentSequential
	}
	var created string
	if ttlText != "" {
		ms, perr := strconv.ParseInt(ttlText, 10, 64)
		if perr != nil || ms <= 0 {
			return fmt.Errorf("%w: bad TTL %q (milliseconds)", errUsage, ttlText)
		}
		created, _, err = s.conn.CreateTTL(ctx, w[0], data, mode, acl, time.Duration(ms)*time.Millisecond)
	} else {
		created, _, err = s.conn.Create(ctx, w[0], data, mode, acl)
	}
	if err != nil {
		return err
	}
	s.printf("Created %s\n", created)
	return nil
}

func (s *Shell) delete(ctx context.Context, a *args) error {
	v, err := a.version()
	if err != nil {
		return err
	}
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	return s.conn.Delete(ctx, w[0], v)
}

func (s *Shell) deleteAll(ctx context.Context, a *args) error {
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	var paths []string
	if err := s.walk(ctx, w[0], func(p string) { paths = append(paths, p) }); err != nil {
		return err
	}
	// Children before parents.
	for i := len(paths) - 1; i >= 0; i-- {
		if paths[i] == "/" || paths[i] == "/zookeeper" || strings.HasPrefix(paths[i], "/zookeeper/") {
			continue
		}
		if err := s.conn.Delete(ctx, paths[i], client.AnyVersion); err != nil && !errors.Is(err, zkproto.ErrNoNode) {
			a.path = paths[i]
			return err
		}
	}
	return nil
}

func (s *Shell) stat(ctx context.Context, a *args) error {
	watch := a.flag("w")
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	var st *zkproto.Stat
	if watch {
		var ev <-chan client.Event
		st, ev, err = s.conn.ExistsW(ctx, w[0])
		if err == nil {
			s.printWatch(ev)
		}
	} else {
		st, err = s.conn.Exists(ctx, w[0])
	}
	if err != nil {
		return err
	}
	if st == nil {
		return zkproto.ErrNoNode
	}
	s.printStat(st)
	return nil
}

// watch adds a persistent (-R: persistent recursive) watch whose events
// print as they come.
func (s *Shell) watch(ctx context.Context, a *args) error {
	recursive := a.flag("R")
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	return s.persistentWatch(ctx, w[0], recursive)
}

// persistentWatch sets a persistent watch on path and prints its events
// until it ends (removewatches, or the session's end).
func (s *Shell) persistentWatch(ctx context.Context, path string, recursive bool) error {
	pw, err := s.conn.AddWatch(ctx, path, recursive)
	if err != nil {
		return err
	}
	go func() {
		for ev := range pw.Events() {
			s.printEvent(ev)
		}
	}()
	return nil
}

// addWatchModes are addWatch's modes (AddWatchMode), the default first.
var addWatchModes = []string{"PERSISTENT_RECURSIVE", "PERSISTENT"}

// addWatch is zkCli's addWatch: a persistent watch, recursive unless
// -m PERSISTENT, whose events print as they come.
func (s *Shell) addWatch(ctx context.Context, a *args) error {
	m, err := a.value("m", addWatchModes[0])
	if err != nil {
		return err
	}
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	switch strings.ToUpper(m) {
	case "PERSISTENT_RECURSIVE":
		return s.persistentWatch(ctx, w[0], true)
	case "PERSISTENT":
		return s.persistentWatch(ctx, w[0], false)
	}
	return fmt.Errorf("%w: mode %q is not one of %s", errUsage, m, strings.Join(addWatchModes, ", "))
}

// watcherTypes are removewatches' options, in the order zkCli looks at
// them, and the watches each selects.
var watcherTypes = []struct {
	flag string
	typ  zkproto.WatcherType
}{
	{"c", zkproto.WatcherChildren},
	{"d", zkproto.WatcherData},
	{"p", zkproto.WatcherPersistent},
	{"r", zkproto.WatcherPersistentRecursive},
	{"a", zkproto.WatcherAny},
}

// removeWatches is zkCli's removewatches: it removes the session's watches
// of one type (any type unless an option names one) on a path; each
// watcher removed prints its *WatchRemoved event. -l is accepted for
// zkCli's syntax; the client removes watches through the server only, so
// without a connection it fails as without -l.
func (s *Shell) removeWatches(ctx context.Context, a *args) error {
	typ := zkproto.WatcherAny
	found := false
	for _, t := range watcherTypes {
		if a.flag(t.flag) && !found {
			typ, found = t.typ, true
		}
	}
	a.flag("l")
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	return s.conn.RemoveWatches(ctx, w[0], typ)
}

// getEphemerals prints the session's ephemeral nodes under a path (all of
// them without one) as zkCli does: a list in brackets.
func (s *Shell) getEphemerals(ctx context.Context, a *args) error {
	w, err := a.positional(0, 1)
	if err != nil {
		return err
	}
	prefix := "/"
	if len(w) == 1 {
		prefix = w[0]
	}
	eph, err := s.conn.GetEphemerals(ctx, prefix)
	if err != nil {
		return err
	}
	s.printf("[%s]\n", strings.Join(eph, ", "))
	return nil
}

// getAllChildrenNumber prints the number of a node's descendants.
func (s *Shell) getAllChildrenNumber(ctx context.Context, a *args) error {
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	n, err := s.conn.GetAllChildrenNumber(ctx, w[0])
	if err != nil {
		return err
	}
	s.printf("%d\n", n)
	return nil
}

// whoami prints the identities the session is authenticated as.
func (s *Shell) whoami(ctx context.Context, a *args) error {
	if _, err := a.positional(0, 0); err != nil {
		return err
	}
	ids, err := s.conn.WhoAmI(ctx)
	if err != nil {
		return err
	}
	s.printf("Auth scheme: User\n")
	for _, id := range ids {
		s.printf("%s: %s\n", id.AuthScheme, id.User)
	}
	return nil
}

// printWatch prints a one-shot watch's event when it fires.
func (s *Shell) printWatch(ev <-chan client.Event) {
	go func() {
		if e, ok := <-ev; ok && e.Err == nil {
			s.printEvent(e)
		}
	}()
}

// printEvent prints an event as zkCli does.
func (s *Shell) printEvent(e client.Event) {
	s.printf("\nWATCHER::\n\nWatchedEvent state:SyncConnected type:%s path:%s\n", e.Type, e.Path)
}

func (s *Shell) lock(ctx context.Context, a *args) error {
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	if _, held := s.locks[w[0]]; held {
		return fmt.Errorf("%w: %s is held by this shell already", errUsage, w[0])
	}
	l := recipes.NewQueueLock(s.conn, w[0], recipes.WithIdentifier([]byte("giraffe-shell")))
	if err := l.Lock(ctx); err != nil {
		return err
	}
	s.locks[w[0]] = l
	seq, _ := l.Sequencer()
	s.printf("locked %s (sequencer %s)\n", w[0], seq)
	return nil
}

func (s *Shell) unlock(ctx context.Context, a *args) error {
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	l, held := s.locks[w[0]]
	if !held {
		return fmt.Errorf("%w: %s is not held by this shell", errUsage, w[0])
	}
	if err := l.Unlock(ctx); err != nil {
		return err
	}
	delete(s.locks, w[0])
	s.printf("unlocked %s\n", w[0])
	return nil
}

func (s *Shell) getACL(ctx context.Context, a *args) error {
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	list, _, err := s.conn.GetACL(ctx, w[0])
	if err != nil {
		return err
	}
	for _, e := range list {
		s.printf("'%s,'%s\n: %s\n", e.ID.Scheme, e.ID.ID, acl.PermString(e.Perms))
	}
	return nil
}

func (s *Shell) setACL(ctx context.Context, a *args) error {
	v, err := a.version()
	if err != nil {
		return err
	}
	w, err := a.positional(2, 2)
	if err != nil {
		return err
	}
	acl, err := ParseACL(w[1])
	if err != nil {
		return err
	}
	_, err = s.conn.SetACL(ctx, w[0], acl, v)
	return err
}

func (s *Shell) addAuth(ctx context.Context, a *args) error {
	if len(a.words) != 2 {
		return errUsage
	}
	return s.conn.AddAuth(ctx, a.words[0], []byte(a.words[1]))
}

func (s *Shell) sync(ctx context.Context, a *args) error {
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	if _, err := s.conn.Sync(ctx, w[0]); err != nil {
		return err
	}
	s.printf("Sync is OK\n")
	return nil
}

func (s *Shell) connectCmd(ctx context.Context, a *args) error {
	if len(a.words) != 1 {
		return errUsage
	}
	return s.connect(ctx, a.words[0])
}

func (s *Shell) help(context.Context, *args) error {
	s.printf("Commands:\n")
	for _, name := range Commands() {
		s.printf("\t%s\n", commands[name].usage)
	}
	return nil
}

// printStat prints a Stat as zkCli does.
func (s *Shell) printStat(st *zkproto.Stat) {
	if st == nil {
		return
	}
	t := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("Mon Jan 02 15:04:05 UTC 2006") }
	s.printf("cZxid = 0x%x\nctime = %s\nmZxid = 0x%x\nmtime = %s\npZxid = 0x%x\ncversion = %d\ndataVersion = %d\naclVersion = %d\nephemeralOwner = 0x%x\ndataLength = %d\nnumChildren = %d\n",
		st.Czxid, t(st.Ctime), st.Mzxid, t(st.Mtime), st.Pzxid, st.Cversion, st.Version, st.Aversion,
		uint64(st.EphemeralOwner), st.DataLength, st.NumChildren)
}

// ParseACL parses zkCli's ACL syntax: comma-separated scheme:id:perms,
// perms a subset of cdrwa (digest ids contain a colon:
// digest:user:hash:perms).
func ParseACL(text string) ([]zkproto.ACL, error) {
	var out []zkproto.ACL
	for _, part := range strings.Split(text, ",") {
		i, j := strings.IndexByte(part, ':'), strings.LastIndexByte(part, ':')
		if i < 0 || j == i {
			return nil, fmt.Errorf("%w: ACL %q is not scheme:id:perms", errUsage, part)
		}
		var perms int32
		for _, c := range []byte(part[j+1:]) {
			bit, ok := acl.ParsePerm(c)
			if !ok {
				return nil, fmt.Errorf("%w: permission %q in %q is not one of cdrwa", errUsage, c, part)
			}
			perms |= bit
		}
		out = append(out, zkproto.ACL{Perms: perms, ID: zkproto.Id{Scheme: part[:i], ID: part[i+1 : j]}})
	}
	return out, nil
}
