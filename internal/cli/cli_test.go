package cli

import (
	"errors"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("failed"), 1},
		{ErrSilent, 1},
		{&ExitError{Code: 3, Err: errors.New("liveness")}, 3},
		{fmt.Errorf("wrapped: %w", &ExitError{Code: 2, Err: errors.New("correctness")}), 2},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
