package snap

import "log/slog"

// Option configures LoadNewest, Save and Purge.
type Option func(*config)

type config struct {
	logger *slog.Logger
}

// WithLogger sends the package's warnings (a damaged snapshot skipped) and
// notices (files purged) to l instead of slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

func configure(opts []Option) config {
	c := config{logger: slog.Default()}
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return c
}
