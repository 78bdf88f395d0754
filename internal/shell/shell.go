// Package shell is `giraffe shell`: a zkCli-style command interpreter over
// package client, usable against Giraffe or ZooKeeper. The interpreter
// reads from any reader (so it is tested without a terminal); the command
// wraps it in a line editor with history and completion when its input is
// a terminal.
package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/recipes"
)

// Shell runs commands on one session.
type Shell struct {
	out     io.Writer
	outMu   sync.Mutex // commands and watch events both print
	opts    []client.Option
	timeout time.Duration

	conn    *client.Conn
	servers string
	locks   map[string]recipes.Locker
}

// New connects to servers (comma-separated host:port) and returns a shell
// printing to out.
func New(ctx context.Context, servers string, out io.Writer, opts ...client.Option) (*Shell, error) {
	s := &Shell{out: out, opts: opts, timeout: 30 * time.Second, locks: map[string]recipes.Locker{}}
	if err := s.connect(ctx, servers); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Shell) connect(ctx context.Context, servers string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c, err := client.Connect(ctx, strings.Split(servers, ","), s.opts...)
	if err != nil {
		return err
	}
	if s.conn != nil {
		s.conn.Close()
	}
	s.conn, s.servers, s.locks = c, servers, map[string]recipes.Locker{}
	return nil
}

// SetTimeout bounds how long each later command, and each connect, waits
// (30 s unless set).
func (s *Shell) SetTimeout(d time.Duration) { s.timeout = d }

// Close ends the session.
func (s *Shell) Close() {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// printf prints a line of output.
func (s *Shell) printf(format string, args ...any) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintf(s.out, format, args...)
}

// errQuit ends Run.
var errQuit = errors.New("quit")

// command is one shell command.
type command struct {
	usage string
	run   func(s *Shell, ctx context.Context, a *args) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"ls":                   {"ls [-s] [-R] PATH", (*Shell).ls},
		"get":                  {"get [-s] [-w] PATH", (*Shell).get},
		"set":                  {"set [-v VERSION] PATH DATA", (*Shell).set},
		"create":               {"create [-e] [-s] [-c] [-t TTL_MS] PATH [DATA] [ACL]", (*Shell).create},
		"delete":               {"delete [-v VERSION] PATH", (*Shell).delete},
		"deleteall":            {"deleteall PATH", (*Shell).deleteAll},
		"stat":                 {"stat [-w] PATH", (*Shell).stat},
		"watch":                {"watch [-R] PATH   (a persistent watch; events print as WATCHER:: lines)", (*Shell).watch},
		"lock":                 {"lock PATH   (takes a queue lock in this session)", (*Shell).lock},
		"unlock":               {"unlock PATH", (*Shell).unlock},
		"getAcl":               {"getAcl PATH", (*Shell).getACL},
		"setAcl":               {"setAcl [-v VERSION] PATH ACL   (e.g. world:anyone:cdrwa,digest:bob:HASH:r)", (*Shell).setACL},
		"addauth":              {"addauth SCHEME AUTH", (*Shell).addAuth},
		"sync":                 {"sync PATH", (*Shell).sync},
		"addWatch":             {"addWatch [-m MODE] PATH   (MODE is PERSISTENT or PERSISTENT_RECURSIVE, the default; events print as WATCHER:: lines)", (*Shell).addWatch},
		"removewatches":        {"removewatches PATH [-c|-d|-p|-r|-a] [-l]   (child, data, persistent, persistent recursive or any watches, the default)", (*Shell).removeWatches},
		"getEphemerals":        {"getEphemerals [PATH]", (*Shell).getEphemerals},
		"getAllChildrenNumber": {"getAllChildrenNumber PATH", (*Shell).getAllChildrenNumber},
		"whoami":               {"whoami", (*Shell).whoami},
		"setquota":             {"setquota -n|-b|-N|-B VAL PATH   (soft node count, soft bytes, hard node count, hard bytes)", (*Shell).setQuota},
		"listquota":            {"listquota PATH", (*Shell).listQuota},
		"delquota":             {"delquota [-n|-b|-N|-B] PATH", (*Shell).delQuota},
		"config":               {"config [-c] [-w] [-s]", (*Shell).config},
		"reconfig":             {"reconfig [-s] [-v VERSION] [-file PATH | -members SERVERID=HOST:PORT1:PORT2;PORT3[,...]] | [-add SERVERID=HOST:PORT1:PORT2;PORT3[,...]] [-remove SERVERID[,...]]", (*Shell).reconfig},
		"connect":              {"connect HOST:PORT[,HOST:PORT...]", (*Shell).connectCmd},
		"close":                {"close", func(s *Shell, _ context.Context, _ *args) error { s.Close(); return nil }},
		"help":                 {"help", (*Shell).help},
		"quit":                 {"quit", func(*Shell, context.Context, *args) error { return errQuit }},
		"exit":                 {"exit", func(*Shell, context.Context, *args) error { return errQuit }},
	}
}

// Commands returns the command names, sorted.
func Commands() []string {
	out := make([]string, 0, len(commands))
	for name := range commands {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Exec runs one command line and prints its output. It returns an error
// if the command failed (already printed) and errQuit-like io.EOF when the
// line asks to quit. Words are split at blanks, except inside single or
// double quotes (in double quotes, a backslash escapes the next
// character), as zkCli reads `create /a "two words"`.
func (s *Shell) Exec(ctx context.Context, line string) error {
	words, err := splitWords(line)
	if err != nil {
		s.printf("%v\n", err)
		return err
	}
	return s.ExecWords(ctx, words)
}

// ExecWords runs one command given as its words (a one-shot command's
// arguments, which the calling shell has already split), as Exec does.
func (s *Shell) ExecWords(ctx context.Context, words []string) error {
	if len(words) == 0 || strings.HasPrefix(words[0], "#") {
		return nil
	}
	cmd, ok := commands[words[0]]
	if !ok {
		err := fmt.Errorf("unknown command %q (try help)", words[0])
		s.printf("%v\n", err)
		return err
	}
	a := &args{words: words[1:]}
	if words[0] != "connect" && words[0] != "help" && words[0] != "quit" && words[0] != "exit" && s.conn == nil {
		err := errors.New("not connected (use connect HOST:PORT)")
		s.printf("%v\n", err)
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := cmd.run(s, ctx, a)
	if err == errQuit {
		return io.EOF
	}
	if err != nil {
		s.printf("%s\n", describe(err, a.path))
		if errors.Is(err, errUsage) {
			s.printf("usage: %s\n", cmd.usage)
		}
	}
	return err
}

// Run executes every line of in, printing a prompt before each when
// prompt is set, until the end of in or quit. It reports whether any
// command failed.
func (s *Shell) Run(ctx context.Context, in io.Reader, prompt string) (failed bool) {
	lines := newLineReader(in)
	for {
		if prompt != "" {
			s.printf("%s", prompt)
		}
		line, ok := lines.next()
		if !ok {
			return failed
		}
		switch err := s.Exec(ctx, line); {
		case err == io.EOF:
			return failed
		case err != nil:
			failed = true
		}
	}
}

// errUsage marks a command line that does not parse.
var errUsage = errors.New("bad arguments")

// args are a command's words, consumed by flag and positional accessors.
type args struct {
	words []string
	path  string // the path the command works on, for messages
}

// flag removes -name from the words and reports whether it was there.
func (a *args) flag(name string) bool {
	i := slices.Index(a.words, "-"+name)
	if i < 0 {
		return false
	}
	a.words = slices.Delete(a.words, i, i+1)
	return true
}

// value removes -name VALUE and returns VALUE (def when absent).
func (a *args) value(name, def string) (string, error) {
	v, ok, err := a.option(name)
	if !ok {
		return def, err
	}
	return v, err
}

// option removes -name VALUE and returns VALUE and whether -name was
// there.
func (a *args) option(name string) (string, bool, error) {
	i := slices.Index(a.words, "-"+name)
	if i < 0 {
		return "", false, nil
	}
	if i+1 >= len(a.words) {
		return "", true, fmt.Errorf("%w: -%s needs a value", errUsage, name)
	}
	v := a.words[i+1]
	a.words = slices.Delete(a.words, i, i+2)
	return v, true, nil
}

// version reads -v VERSION (AnyVersion when absent).
func (a *args) version() (int32, error) {
	v, err := a.value("v", "-1")
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: bad version %q", errUsage, v)
	}
	return int32(n), nil
}

// positional returns the remaining words, between min and max of them;
// the first is taken as the path.
func (a *args) positional(lo, hi int) ([]string, error) {
	for _, w := range a.words {
		if strings.HasPrefix(w, "-") && len(w) > 1 && !isNumber(w) {
			return nil, fmt.Errorf("%w: unknown option %s", errUsage, w)
		}
	}
	if len(a.words) < lo || len(a.words) > hi {
		return nil, errUsage
	}
	if len(a.words) > 0 {
		a.path = a.words[0]
		if !strings.HasPrefix(a.path, "/") {
			return nil, fmt.Errorf("%w: path must start with / : %s", errUsage, a.path)
		}
	}
	return a.words, nil
}

func isNumber(w string) bool { _, err := strconv.Atoi(w); return err == nil }

// splitWords splits a command line into words at blanks, keeping quoted
// text (single or double quotes) in one word without its quotes.
func splitWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			inWord = true
			j := i + 1
			for ; j < len(line) && line[j] != c; j++ {
				if c == '"' && line[j] == '\\' && j+1 < len(line) {
					j++
				}
				w.WriteByte(line[j])
			}
			if j == len(line) {
				return nil, fmt.Errorf("%w: unterminated %c quote", errUsage, c)
			}
			i = j
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
