package itest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestVersion: `giraffe version` and `giraffe --version` exit 0 and print
// the same version line; version adds the ZooKeeper version the servers
// report.
func TestVersion(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	sub, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("giraffe version: %v", err)
	}
	flag, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("giraffe --version: %v", err)
	}
	first, rest, _ := strings.Cut(string(sub), "\n")
	if !strings.HasPrefix(first, "giraffe ") || first+"\n" != string(flag) || !strings.Contains(rest, "ZooKeeper protocol: 3.") {
		t.Fatalf("giraffe version:\n%s\ngiraffe --version:\n%s", sub, flag)
	}
}
