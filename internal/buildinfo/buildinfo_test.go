package buildinfo

import "testing"

func TestString(t *testing.T) {
	for _, tc := range []struct {
		i    Info
		want string
	}{
		{Info{Version: "v1.2.3", Commit: "0123456789abcdef0123", Go: "go1.24.1"}, "v1.2.3 (commit 0123456789ab, go1.24.1)"},
		{Info{Version: "devel", Commit: "abc", Modified: true, Go: "go1.24.1"}, "devel (commit abc, modified, go1.24.1)"},
		{Info{Version: "devel", Go: "go1.24.1"}, "devel (go1.24.1)"},
	} {
		if got := tc.i.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.i, got, tc.want)
		}
	}
}

// TestReadStamped: the link-time version wins over the module's.
func TestReadStamped(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "v9.9.9"
	if i := Read(); i.Version != "v9.9.9" || i.Go == "" {
		t.Errorf("Read with a stamped version: %+v", i)
	}
}
