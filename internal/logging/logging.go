// Package logging builds the logger of Giraffe's long-running commands
// (the server, the HC daemon): one structured format, text (logfmt) or
// JSON lines, on stderr, which journald and container runtimes collect as
// it is, or in a file rotated by size.
package logging

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"
	"gopkg.in/natefinch/lumberjack.v2"
)

// Options say how and where to log; AddFlags binds them to flags.
type Options struct {
	// Level is debug, info, warn or error.
	Level string
	// Format is text (key=value lines) or json (one object per line).
	Format string
	// File, when set, is written instead of stderr and rotated when it
	// grows past MaxSizeMB, keeping MaxBackups old files (compressed) for
	// at most MaxAgeDays days (0: no age limit).
	File                              string
	MaxSizeMB, MaxBackups, MaxAgeDays int
}

// AddFlags adds the logging flags to fs, with their defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.Format, "log-format", "text", "log format: text (key=value lines) or json (one object per line)")
	fs.StringVar(&o.File, "log-file", "", "write the log to this file, rotated by size, instead of stderr")
	fs.IntVar(&o.MaxSizeMB, "log-max-size", 100, "with --log-file: rotate when the file passes this many MiB")
	fs.IntVar(&o.MaxBackups, "log-max-backups", 5, "with --log-file: rotated files to keep (gzip-compressed)")
	fs.IntVar(&o.MaxAgeDays, "log-max-age", 0, "with --log-file: days to keep rotated files (0: no limit)")
}

// New returns the logger the options describe, writing to stderr unless
// File is set, and what to close when the command ends.
func (o Options) New(stderr io.Writer) (*slog.Logger, io.Closer, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.Level)); err != nil {
		return nil, nil, fmt.Errorf("--log-level: %w", err)
	}
	var w io.Writer = stderr
	var closer io.Closer = nopCloser{}
	if o.File != "" {
		if o.MaxSizeMB < 1 || o.MaxBackups < 0 || o.MaxAgeDays < 0 {
			return nil, nil, fmt.Errorf("--log-max-size must be at least 1, --log-max-backups and --log-max-age not negative")
		}
		lj := &lumberjack.Logger{Filename: o.File, MaxSize: o.MaxSizeMB, MaxBackups: o.MaxBackups,
			MaxAge: o.MaxAgeDays, Compress: true}
		w, closer = lj, lj
	}
	opts := &slog.HandlerOptions{Level: level}
	switch o.Format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), closer, nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), closer, nil
	}
	closer.Close()
	return nil, nil, fmt.Errorf("--log-format %q: want text or json", o.Format)
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
