// Package cpuquota gives a set of processes a CPU budget of their own: a
// control group with a CFS bandwidth quota (cgroup v2 `cpu.max`, or the
// v1 `cpu` controller's `cpu.cfs_quota_us`). The benchmarks use it to give
// every ensemble of a multi-ensemble experiment the share of a machine it
// would have on machines of its own, which one shared machine otherwise
// does not: there, an extra ensemble only divides the same cores further.
//
// It needs write access to a cgroup hierarchy with the cpu controller
// (root, or a delegated subtree); New says clearly when there is none.
package cpuquota

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// period is the CFS period of every group: the quota is refilled this
// often, so a group that used its share waits at most this long.
const period = 100 * time.Millisecond

// ErrUnavailable is wrapped by New's error when this machine offers no
// writable cgroup hierarchy with the cpu controller.
var ErrUnavailable = errors.New("cpuquota: no writable cgroup with the cpu controller")

// Group is one control group with a CPU quota.
type Group struct {
	dir string
	// v2 selects the unified hierarchy's file names.
	v2 bool
	// parent is where processes return when the group is removed.
	parent string
}

// New creates the control group name with a quota of cpus CPUs (0.5 is
// half of one core, 2 two cores) in the first usable hierarchy: the
// unified (v2) one if its cpu controller is available, else the v1 cpu
// controller's mount.
func New(name string, cpus float64) (*Group, error) {
	if cpus <= 0 {
		return nil, fmt.Errorf("cpuquota: quota %.3g CPUs must be positive", cpus)
	}
	if strings.ContainsAny(name, "/.") || name == "" {
		return nil, fmt.Errorf("cpuquota: bad group name %q", name)
	}
	root, v2, err := hierarchy()
	if err != nil {
		return nil, err
	}
	g := &Group{dir: filepath.Join(root, name), v2: v2, parent: root}
	if v2 {
		// The root of the unified hierarchy has no processes of its own
		// to constrain its children, so enabling cpu there is allowed.
		if err := os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
			return nil, fmt.Errorf("%w: enabling cpu in %s: %v", ErrUnavailable, root, err)
		}
	}
	if err := os.Mkdir(g.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	quota := int64(cpus * float64(period/time.Microsecond))
	if v2 {
		err = g.write("cpu.max", fmt.Sprintf("%d %d", quota, period/time.Microsecond))
	} else {
		err = g.write("cpu.cfs_period_us", strconv.FormatInt(int64(period/time.Microsecond), 10))
		if err == nil {
			err = g.write("cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
		}
	}
	if err != nil {
		os.Remove(g.dir)
		return nil, fmt.Errorf("%w: setting the quota of %s: %v", ErrUnavailable, g.dir, err)
	}
	return g, nil
}

// Available reports whether New can work here, and if not, why.
func Available() error {
	_, _, err := hierarchy()
	return err
}

// Dir is the group's directory.
func (g *Group) Dir() string { return g.dir }

// Add moves process pid, with all its threads, into the group.
func (g *Group) Add(pid int) error {
	return g.write("cgroup.procs", strconv.Itoa(pid))
}

// Throttled returns how many CFS periods the group has been throttled in
// (its processes wanted more than the quota) and out of how many.
func (g *Group) Throttled() (throttled, periods int64, err error) {
	b, err := os.ReadFile(filepath.Join(g.dir, "cpu.stat"))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "nr_throttled":
			throttled = n
		case "nr_periods":
			periods = n
		}
	}
	return throttled, periods, nil
}

// Remove moves any process left in the group back to the hierarchy's
// root and deletes the group.
func (g *Group) Remove() error {
	b, _ := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
	for _, pid := range strings.Fields(string(b)) {
		// A process that exits meanwhile makes this fail; rmdir decides.
		os.WriteFile(filepath.Join(g.parent, "cgroup.procs"), []byte(pid), 0)
	}
	return os.Remove(g.dir)
}

func (g *Group) write(file, value string) error {
	return os.WriteFile(filepath.Join(g.dir, file), []byte(value), 0)
}

// hierarchy finds a writable cgroup hierarchy with the cpu controller
// from /proc/self/mounts: the unified one (cgroup2) if "cpu" is among
// its controllers, else a v1 mount whose options include "cpu", where
// groups are made under this process's own group when it has one.
func hierarchy() (root string, v2 bool, err error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", false, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer f.Close()
	var unified, v1 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := strings.Fields(sc.Text())
		if len(m) < 4 {
			continue
		}
		switch m[2] {
		case "cgroup2":
			b, err := os.ReadFile(filepath.Join(m[1], "cgroup.controllers"))
			if err == nil && hasWord(string(b), "cpu") {
				unified = m[1]
			}
		case "cgroup":
			if hasWord(strings.ReplaceAll(m[3], ",", " "), "cpu") {
				v1 = m[1]
			}
		}
	}
	switch {
	case unified != "" && writable(unified):
		return unified, true, nil
	case v1 != "":
		// Under this process's own group, so that the new group shares
		// the CPU its parent is given (and a delegated subtree works).
		if own := ownV1Group(); own != "" && writable(filepath.Join(v1, own)) {
			return filepath.Join(v1, own), false, nil
		}
		if writable(v1) {
			return v1, false, nil
		}
	}
	switch {
	case unified != "" || v1 != "":
		return "", false, fmt.Errorf("%w: the cpu controller is mounted (%s) but not writable by this user (run as root, or delegate a subtree)", ErrUnavailable, unified+v1)
	}
	return "", false, fmt.Errorf("%w: neither cgroup v2 with cpu in cgroup.controllers nor a v1 cpu mount in /proc/self/mounts", ErrUnavailable)
}

// ownV1Group is this process's group in the v1 cpu hierarchy, from
// /proc/self/cgroup ("N:cpu,cpuacct:/path"), or "" at the root.
func ownV1Group() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && hasWord(strings.ReplaceAll(f[1], ",", " "), "cpu") && f[2] != "/" {
			return strings.TrimPrefix(f[2], "/")
		}
	}
	return ""
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// writable reports whether this process may create groups under dir.
func writable(dir string) bool {
	probe := filepath.Join(dir, fmt.Sprintf("cpuquota-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return false
	}
	os.Remove(probe)
	return true
}

// ProcessCPU returns the CPU time (user and system) process pid has used,
// from /proc/PID/stat, in the kernel's clock ticks of 10 ms (USER_HZ is
// 100 on Linux).
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted from the last ')'; utime and stime are fields 14 and 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, fmt.Errorf("cpuquota: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("cpuquota: malformed /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpuquota: malformed /proc/%d/stat", pid)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
