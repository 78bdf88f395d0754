package shell

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// config is zkCli's config: /zookeeper/config's data ("null" when the
// node has none), or with -c the client connection string it names; -w
// leaves a watch on it, -s prints its Stat.
func (s *Shell) config(ctx context.Context, a *args) error {
	clientStr, watch, withStat := a.flag("c"), a.flag("w"), a.flag("s")
	if _, err := a.positional(0, 0); err != nil {
		return err
	}
	a.path = client.ConfigNode
	var data []byte
	var st *zkproto.Stat
	var err error
	if watch {
		var ev <-chan client.Event
		data, st, ev, err = s.conn.GetW(ctx, client.ConfigNode)
		if err == nil {
			s.printWatch(ev)
		}
	} else {
		data, st, err = s.conn.Get(ctx, client.ConfigNode)
	}
	if err != nil {
		return err
	}
	text := "null"
	if data != nil {
		text = string(data)
	}
	if clientStr {
		text = clientConfig(text)
	}
	s.printf("%s\n", text)
	if withStat {
		s.printStat(st)
	}
	return nil
}

// clientConfig turns a dynamic configuration into zkCli's config -c line:
// its version, a blank, and the servers' client addresses separated by
// commas (a client address given as a port alone is 0.0.0.0:port). The
// servers come in id order.
func clientConfig(cfg string) string {
	type server struct {
		id     int
		client string
	}
	var servers []server
	version := ""
	for _, line := range strings.Split(cfg, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if key == "version" {
			version = val
		}
		idText, isServer := strings.CutPrefix(key, "server.")
		if !isServer {
			continue
		}
		id, _ := strconv.Atoi(idText)
		sv := server{id: id}
		if parts := strings.Split(val, ";"); len(parts) > 1 && parts[1] != "" {
			sv.client = parts[1]
			if !strings.Contains(sv.client, ":") {
				sv.client = "0.0.0.0:" + sv.client
			}
		}
		servers = append(servers, sv)
	}
	slices.SortFunc(servers, func(x, y server) int { return x.id - y.id })
	addrs := make([]string, len(servers))
	for i, sv := range servers {
		addrs[i] = sv.client
	}
	return version + " " + strings.Join(addrs, ",")
}

// reconfig is zkCli's reconfig: an incremental change (-add server specs,
// -remove server ids) or a whole new membership (-members, or the server
// lines of a configuration file with -file), from configuration version -v
// (hexadecimal, as config prints it) when given. It prints the committed
// configuration, and its Stat with -s.
func (s *Shell) reconfig(ctx context.Context, a *args) error {
	withStat := a.flag("s")
	opts := map[string]string{}
	for _, name := range []string{"v", "file", "members", "add", "remove"} {
		v, ok, err := a.option(name)
		if err != nil {
			return err
		}
		if ok && name != "file" && name != "v" {
			// As zkCli, which sends server specs lowercased.
			v = strings.ToLower(v)
		}
		if ok {
			opts[name] = v
		}
	}
	if _, err := a.positional(0, 0); err != nil {
		return err
	}
	has := func(name string) bool { _, ok := opts[name]; return ok }
	nonIncremental := has("file") || has("members")
	switch {
	case !nonIncremental && !has("add") && !has("remove"):
		return fmt.Errorf("%w: one of -file, -members, -add, -remove is required", errUsage)
	case nonIncremental && (has("add") || has("remove")):
		return fmt.Errorf("%w: Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)", errUsage)
	case has("file") && has("members"):
		return fmt.Errorf("%w: Can't use -file and -members together (conflicting non-incremental modes)", errUsage)
	}
	version := client.AnyConfig
	if v, ok := opts["v"]; ok {
		n, err := strconv.ParseInt(v, 16, 64)
		if err != nil {
			return fmt.Errorf("%w: -v must be followed by a long (configuration version)", errUsage)
		}
		version = n
	}
	var data []byte
	var st *zkproto.Stat
	var err error
	switch {
	case has("file"):
		members, ferr := membersOfFile(opts["file"])
		if ferr != nil {
			return fmt.Errorf("%w: Error processing %s: %v", errUsage, opts["file"], ferr)
		}
		data, st, err = s.conn.Reconfig(ctx, members, version)
	case has("members"):
		data, st, err = s.conn.Reconfig(ctx, strings.Split(opts["members"], ","), version)
	default:
		data, st, err = s.conn.IncrementalReconfig(ctx, splitNonEmpty(opts["add"]), splitNonEmpty(opts["remove"]), version)
	}
	if err != nil {
		return err
	}
	s.printf("Committed new configuration:\n%s\n", data)
	if withStat {
		s.printStat(st)
	}
	return nil
}

// splitNonEmpty splits a comma-separated list; an empty text is no item.
func splitNonEmpty(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(text, ",")
}

// membersOfFile reads the server lines (server.N=...) of a dynamic
// configuration file, lowercased as zkCli sends them.
func membersOfFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "server.") && strings.Contains(line, "=") {
			out = append(out, strings.ToLower(line))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no server.N lines")
	}
	return out, nil
}
