// Package cli is what Giraffe's two commands (giraffe and giraffe-lab)
// share: running the root command and turning its error into the
// process's exit status.
package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// ExitError carries a specific exit status out of a subcommand (a
// simulation's kind of failure, the status of a command run under a lock).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ErrSilent makes a command exit with status 1 without a message of its
// own: the command has printed why.
var ErrSilent = errors.New("")

// Run executes root and exits: with status 0, with an ExitError's code, or
// with 1 after printing "NAME: error" to stderr.
func Run(root *cobra.Command) {
	root.SilenceUsage, root.SilenceErrors = true, true
	err := root.Execute()
	if err == nil {
		os.Exit(0)
	}
	if err != ErrSilent {
		fmt.Fprintf(os.Stderr, "%s: %v\n", root.Name(), err)
	}
	os.Exit(ExitCode(err))
}

// ExitCode returns the status to exit with for err: 0 for nil, the code of
// an *ExitError, 1 otherwise.
func ExitCode(err error) int {
	var e *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &e):
		return e.Code
	}
	return 1
}
