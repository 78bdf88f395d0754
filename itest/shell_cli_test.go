package itest

import (
	"bytes"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestShellOneShot runs `giraffe shell` one command at a time against a
// standalone server: the command's own options follow the servers
// (create -s, ls -R), connection attempts go to stderr (not with -q), and a
// server that does not answer makes the shell give up after --timeout
// with status 1, having printed each failed attempt.
func TestShellOneShot(t *testing.T) {
	p := StartStandalone(t)
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	shell := func(args ...string) (stdout, stderr string, err error) {
		var o, e bytes.Buffer
		c := exec.Command(bin, append([]string{"shell"}, args...)...)
		c.Stdout, c.Stderr = &o, &e
		err = c.Run()
		return o.String(), e.String(), err
	}
	for _, cmd := range [][]string{{"create", "/a", "x"}, {"create", "-s", "/a/n", "y"}} {
		if out, errOut, err := shell(append([]string{"--timeout", "10s", p.Addr}, cmd...)...); err != nil {
			t.Fatalf("shell %v: %v\n%s%s", cmd, err, out, errOut)
		}
	}
	out, errOut, err := shell(p.Addr, "ls", "-R", "/a")
	if err != nil || out != "/a\n/a/n0000000000\n" {
		t.Fatalf("shell ls -R /a: %v\nstdout %q\nstderr %q", err, out, errOut)
	}
	if !strings.Contains(errOut, `msg=connected server=`+p.Addr) {
		t.Errorf("the shell's stderr does not show the connection: %q", errOut)
	}
	if _, errOut, _ := shell("-q", p.Addr, "ls", "/"); errOut != "" {
		t.Errorf("shell -q printed %q", errOut)
	}
	// A port nothing listens on: taken, then closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, errOut, err = shell("--timeout", "1s", dead, "ls", "/")
	took := time.Since(start)
	if exitCode(err) != 1 || !strings.Contains(errOut, "connection attempt failed") || !strings.Contains(errOut, "deadline exceeded") {
		t.Fatalf("shell on a dead server: %v\n%s", err, errOut)
	}
	if took > 5*time.Second {
		t.Errorf("shell --timeout 1s gave up after %v", took)
	}
}

// exitCode returns the exit status of a command that ran (0 for nil), -1
// for one that did not.
func exitCode(err error) int {
	var e *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &e):
		return e.ExitCode()
	}
	return -1
}
