package shell

import (
	"bufio"
	"context"
	"io"
	"slices"
	"strings"
	"time"
)

// Complete returns the completions of line, whole lines as a line editor
// wants them: command names for the first word, addWatch's modes after
// its -m, and znode paths (the children of the typed parent) for a later
// word that starts with "/".
func (s *Shell) Complete(ctx context.Context, line string) []string {
	words := strings.Fields(line)
	if len(words) == 0 || (len(words) == 1 && !strings.HasSuffix(line, " ")) {
		prefix := ""
		if len(words) == 1 {
			prefix = words[0]
		}
		var out []string
		for _, name := range Commands() {
			if strings.HasPrefix(name, prefix) {
				out = append(out, name+" ")
			}
		}
		return out
	}
	if words[0] == "addWatch" {
		// The word being typed, and the one before it.
		cur, prev := "", words[len(words)-1]
		if !strings.HasSuffix(line, " ") {
			cur, prev = words[len(words)-1], words[len(words)-2]
		}
		if prev == "-m" {
			var out []string
			for _, m := range addWatchModes {
				if strings.HasPrefix(m, strings.ToUpper(cur)) {
					out = append(out, line[:len(line)-len(cur)]+m+" ")
				}
			}
			slices.Sort(out)
			return out
		}
	}
	if strings.HasSuffix(line, " ") || s.conn == nil {
		return nil
	}
	last := words[len(words)-1]
	if !strings.HasPrefix(last, "/") {
		return nil
	}
	head := line[:len(line)-len(last)]
	dir, base := "/", last[1:]
	if i := strings.LastIndexByte(last, '/'); i > 0 {
		dir, base = last[:i], last[i+1:]
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	kids, _, err := s.conn.Children(ctx, dir)
	if err != nil {
		return nil
	}
	slices.Sort(kids)
	var out []string
	for _, k := range kids {
		if strings.HasPrefix(k, base) {
			out = append(out, head+join(dir, k))
		}
	}
	return out
}

// lineReader reads commands line by line from a non-terminal input.
type lineReader struct{ sc *bufio.Scanner }

func newLineReader(in io.Reader) *lineReader {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &lineReader{sc: sc}
}

func (r *lineReader) next() (string, bool) {
	if !r.sc.Scan() {
		return "", false
	}
	return r.sc.Text(), true
}
