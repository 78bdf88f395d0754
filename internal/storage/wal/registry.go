package wal

import (
	"fmt"
	"path/filepath"
	"sync"
)

// The registry maps the directories of the logs open in this process to
// their Logs. It exists for PurgeBefore(dir, ...), which the snapshot code
// calls with a directory name while the server's Log is open on it: the
// purge must then go through that Log, under its lock, rather than delete
// files behind its back. It also turns a second Open of the same directory
// into a clear error before the flock would.
var registry struct {
	sync.Mutex
	logs map[string]*Log // nil value: Open in progress
}

func registryKey(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return filepath.Clean(dir)
}

// registerOpen reserves dir for an Open in progress.
func registerOpen(dir string) (string, error) {
	key := registryKey(dir)
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.logs[key]; ok {
		return "", fmt.Errorf("wal: %s is already open in this process", dir)
	}
	if registry.logs == nil {
		registry.logs = make(map[string]*Log)
	}
	registry.logs[key] = nil
	return key, nil
}

// registerLog records the Log that a successful Open returns.
func registerLog(key string, l *Log) {
	registry.Lock()
	defer registry.Unlock()
	registry.logs[key] = l
}

func unregisterOpen(key string) {
	registry.Lock()
	defer registry.Unlock()
	delete(registry.logs, key)
}

// openLog returns the Log open on dir in this process. present with a nil
// Log means an Open of dir is in progress.
func openLog(dir string) (l *Log, present bool) {
	registry.Lock()
	defer registry.Unlock()
	l, present = registry.logs[registryKey(dir)]
	return l, present
}
