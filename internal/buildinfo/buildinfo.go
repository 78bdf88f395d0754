// Package buildinfo says which build of Giraffe is running: the version
// stamped at link time (or the module's, for `go install ...@version`),
// the commit it was built from, and the Go release that built it.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is stamped at link time by release builds:
//
//	go build -ldflags "-X github.com/giraffe-coord/giraffe/internal/buildinfo.Version=v1.2.3" ./cmd/giraffe
var Version string

// Info describes a build.
type Info struct {
	// Version is the stamped version, else the module's version, else
	// "devel" (a build from a checkout).
	Version string
	// Commit is the VCS revision the binary was built from ("" when not
	// known); Modified says the checkout had uncommitted changes.
	Commit   string
	Modified bool
	// Go is the Go release that built the binary.
	Go string
}

// Read returns this binary's Info.
func Read() Info {
	i := Info{Version: Version, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if i.Version == "" {
		i.Version = "devel"
	}
	return i
}

// String formats i on one line: "v1.2.3 (commit 0123abcd4567, go1.24.1)",
// with ", modified" after the commit of a build from a changed checkout.
func (i Info) String() string {
	var extra []string
	if i.Commit != "" {
		c := "commit " + i.Commit[:min(12, len(i.Commit))]
		if i.Modified {
			c += ", modified"
		}
		extra = append(extra, c)
	}
	extra = append(extra, i.Go)
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(extra, ", "))
}
