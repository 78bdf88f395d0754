package shell

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/quota"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// zkCli's quota commands are recipes over the nodes of package quota: the
// client writes a quota root's limits node, the server keeps its stats
// node (docs/quotas.md). What zkCli prints on its error stream is a
// failed command here; what it prints on its output (a warning, "Quota
// does not exist") is not.

// quotaOptions are setquota's and delquota's options: the record key each
// sets or clears.
var quotaOptions = []struct {
	flag, key string
	count     bool // a number of nodes, not of bytes
}{
	{"n", quota.KeyCount, true},
	{"b", quota.KeyBytes, false},
	{"N", quota.KeyCountHardLimit, true},
	{"B", quota.KeyByteHardLimit, false},
}

// quotaOption removes the one quota option of a command line, and its
// value when withValue, from a's words; it returns the option's index in
// quotaOptions, -1 if there is none.
func quotaOption(a *args, withValue bool) (int, string, error) {
	found := -1
	for i, o := range quotaOptions {
		if !slices.Contains(a.words, "-"+o.flag) {
			continue
		}
		if found >= 0 {
			return 0, "", fmt.Errorf("%w: -%s and -%s exclude each other", errUsage, quotaOptions[found].flag, o.flag)
		}
		found = i
	}
	if found < 0 {
		return -1, "", nil
	}
	if !withValue {
		a.flag(quotaOptions[found].flag)
		return found, "", nil
	}
	val, _, err := a.option(quotaOptions[found].flag)
	return found, val, err
}

func (s *Shell) setQuota(ctx context.Context, a *args) error {
	opt, val, err := quotaOption(a, true)
	if err != nil {
		return err
	}
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	if opt < 0 {
		return fmt.Errorf("%w: one of -n, -b, -N, -B is required", errUsage)
	}
	path := w[0]
	if strings.HasPrefix(path, quota.Root) {
		return errors.New("cannot set a quota under the path: " + quota.Root)
	}
	o := quotaOptions[opt]
	n, perr := strconv.ParseInt(val, 10, 64)
	switch {
	case perr != nil || o.count && int64(int32(n)) != n:
		return errors.New("NumberFormatException happens when parsing the option value")
	case o.count && n <= 0:
		return errors.New("the num quota must be greater than zero")
	case !o.count && n < 0:
		return errors.New("the bytes quota must be greater than or equal to zero")
	}
	return s.createQuota(ctx, a, path, o.key, n)
}

// createQuota sets limit key to n on quota root path, as zkCli's
// SetQuotaCommand.createQuota: refused for a missing path and for a path
// with a quota root above or below it; a new root gets a limits node with
// every other limit unset and a stats node the server fills; an existing
// root's other limits are kept.
func (s *Shell) createQuota(ctx context.Context, a *args, path, key string, n int64) error {
	if st, err := s.conn.Exists(ctx, path); err != nil {
		return err
	} else if st == nil {
		return errors.New(path + " does not exist.")
	}
	if err := s.checkNoQuotaBelow(ctx, path); err != nil {
		return err
	}
	if err := s.checkNoQuotaAbove(ctx, path); err != nil {
		return err
	}
	// The quota root's directory and its parents, as zkCli makes them.
	dir := quota.Root
	for _, part := range strings.Split(path, "/")[1:] {
		if part == "" {
			continue
		}
		dir += "/" + part
		if err := s.createIfMissing(ctx, a, dir, nil); err != nil {
			return err
		}
	}
	limitPath, statPath := dir+"/"+quota.LimitNode, dir+"/"+quota.StatNode
	a.path = limitPath
	data, _, err := s.conn.Get(ctx, limitPath)
	switch {
	case errors.Is(err, zkproto.ErrNoNode):
		limits := quota.Stats{quota.KeyCount: -1, quota.KeyBytes: -1, quota.KeyCountHardLimit: -1, quota.KeyByteHardLimit: -1}
		limits[key] = n
		if _, _, err := s.conn.Create(ctx, limitPath, []byte(limits.String()), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
			return err
		}
		a.path = statPath
		zero := quota.Stats{quota.KeyCount: 0, quota.KeyBytes: 0}
		if _, _, err := s.conn.Create(ctx, statPath, []byte(zero.String()), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
			return err
		}
		return s.warnUnderQuota(ctx, a, limits, statPath)
	case err != nil:
		return err
	}
	limits := quota.Parse(data)
	limits[key] = n
	if err := s.warnUnderQuota(ctx, a, limits, statPath); err != nil {
		return err
	}
	a.path = limitPath
	_, err = s.conn.Set(ctx, limitPath, []byte(limits.String()), client.AnyVersion)
	return err
}

// createIfMissing creates a persistent node unless it exists.
func (s *Shell) createIfMissing(ctx context.Context, a *args, path string, data []byte) error {
	if st, err := s.conn.Exists(ctx, path); err != nil || st != nil {
		a.path = path
		return err
	}
	_, _, err := s.conn.Create(ctx, path, data, client.Persistent, zkproto.OpenACLUnsafe)
	if err != nil && !errors.Is(err, zkproto.ErrNodeExists) {
		a.path = path
		return err
	}
	return nil
}

// warnUnderQuota prints zkCli's warnings for limits the subtree already
// exceeds.
func (s *Shell) warnUnderQuota(ctx context.Context, a *args, limits quota.Stats, statPath string) error {
	data, _, err := s.conn.Get(ctx, statPath)
	if err != nil {
		a.path = statPath
		return err
	}
	stats := quota.Parse(data)
	under := func(soft, hard, what string) {
		v := stats.Get(what)
		if l := limits.Get(soft); l > -1 && l < v || limits.Get(hard) > -1 && limits.Get(hard) < v {
			s.printf("[Warning]: the %s quota you create is less than the existing %s:%d\n", what, what, v)
		}
	}
	under(quota.KeyCount, quota.KeyCountHardLimit, quota.KeyCount)
	under(quota.KeyBytes, quota.KeyByteHardLimit, quota.KeyBytes)
	return nil
}

// checkNoQuotaBelow refuses a quota on path when a node below it is a
// quota root, naming the first found in a depth-first walk.
func (s *Shell) checkNoQuotaBelow(ctx context.Context, path string) error {
	top := strings.TrimSuffix(quota.Root+path, "/")
	var visit func(dir string) error
	visit = func(dir string) error {
		kids, _, err := s.conn.Children(ctx, dir)
		if errors.Is(err, zkproto.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		if dir != top && slices.Contains(kids, quota.LimitNode) {
			return fmt.Errorf("%s has a child %s which has a quota", path, strings.TrimPrefix(dir, quota.Root))
		}
		slices.Sort(kids)
		for _, k := range kids {
			if err := visit(dir + "/" + k); err != nil {
				return err
			}
		}
		return nil
	}
	return visit(top)
}

// checkNoQuotaAbove refuses a quota on path when one of its ancestors is a
// quota root.
func (s *Shell) checkNoQuotaAbove(ctx context.Context, path string) error {
	parts := strings.Split(path, "/")
	dir := quota.Root
	for _, part := range parts[1 : len(parts)-1] {
		dir += "/" + part
		kids, _, err := s.conn.Children(ctx, dir)
		if errors.Is(err, zkproto.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		if slices.Contains(kids, quota.LimitNode) {
			return fmt.Errorf("%s has a parent %s which has a quota", path, strings.TrimPrefix(dir, quota.Root))
		}
	}
	return nil
}

// listQuota prints a quota root's limits and stats records, as
// StatsTrack writes them.
func (s *Shell) listQuota(ctx context.Context, a *args) error {
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	path := w[0]
	s.printf("absolute path is %s\n", quota.LimitPath(path))
	limits, _, err := s.conn.Get(ctx, quota.LimitPath(path))
	if err != nil {
		return quotaErr(err, path)
	}
	stats, _, err := s.conn.Get(ctx, quota.StatPath(path))
	if err != nil {
		return quotaErr(err, path)
	}
	s.printf("Output quota for %s %s\n", path, quota.Parse(limits))
	s.printf("Output stat for %s %s\n", path, quota.Parse(stats))
	return nil
}

// quotaErr is zkCli's message for a quota node that is missing.
func quotaErr(err error, path string) error {
	if errors.Is(err, zkproto.ErrNoNode) {
		return errors.New("quota for " + path + " does not exist.")
	}
	return err
}

// delQuota clears one limit of a quota root (-n, -b, -N, -B) or, without
// an option, removes the quota: the root's nodes, and the directories
// above it that are left empty.
func (s *Shell) delQuota(ctx context.Context, a *args) error {
	opt, _, err := quotaOption(a, false)
	if err != nil {
		return err
	}
	w, err := a.positional(1, 1)
	if err != nil {
		return err
	}
	path := w[0]
	limitPath := quota.LimitPath(path)
	data, _, err := s.conn.Get(ctx, limitPath)
	if errors.Is(err, zkproto.ErrNoNode) {
		s.printf("Quota does not exist for %s\n", path)
		return nil
	}
	if err != nil {
		a.path = limitPath
		return err
	}
	if opt >= 0 {
		limits := quota.Parse(data)
		limits[quotaOptions[opt].key] = -1
		_, err := s.conn.Set(ctx, limitPath, []byte(limits.String()), client.AnyVersion)
		return quotaErr(err, path)
	}
	dir := quota.Root + path
	kids, _, err := s.conn.Children(ctx, dir)
	if err != nil {
		return quotaErr(err, path)
	}
	for _, k := range kids {
		if err := s.conn.Delete(ctx, dir+"/"+k, client.AnyVersion); err != nil {
			a.path = dir + "/" + k
			return err
		}
	}
	// Trim the directories left empty, up to the quota subtree's root.
	for ; dir != quota.Root && strings.HasPrefix(dir, quota.Root+"/"); dir = dir[:strings.LastIndexByte(dir, '/')] {
		kids, _, err := s.conn.Children(ctx, dir)
		if err != nil {
			a.path = dir
			return err
		}
		if len(kids) > 0 {
			break
		}
		if err := s.conn.Delete(ctx, dir, client.AnyVersion); err != nil {
			a.path = dir
			return err
		}
	}
	return nil
}
