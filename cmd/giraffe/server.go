package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/server"
)

func newServerCmd() *cobra.Command {
	var (
		configFile  string
		dataDir     string
		clientPort  int
		clientAddr  string
		metricsPort int
		logLevel    string
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a standalone Giraffe server",
		Long: `Run a standalone Giraffe server on the ZooKeeper client port.

Settings come from --config (Giraffe's own file or an existing ZooKeeper
zoo.cfg: dataDir, dataLogDir, clientPort, clientPortAddress, tickTime,
minSessionTimeout, maxSessionTimeout, maxClientCnxns, 4lw.commands.whitelist,
jute.maxbuffer, snapCount, autopurge.*, superDigest, extendedTypesEnabled,
forceSync, metricsPort), then from the flags, which win.

Every write is fsynced to the transaction log before it is acknowledged; a
restart recovers exactly the acknowledged state from the newest snapshot and
the log.`,
		Example: `  giraffe server --data-dir /tmp/giraffe --client-port 2181
  giraffe server --config /etc/zookeeper/zoo.cfg --metrics-port 7000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			cfg := server.DefaultConfig()
			if configFile != "" {
				ignored, err := server.LoadConfigFile(configFile, &cfg)
				if err != nil {
					return err
				}
				if len(ignored) > 0 {
					logger.Info("config keys not used by Giraffe", "keys", strings.Join(ignored, ","))
				}
			}
			flags := cmd.Flags()
			if flags.Changed("data-dir") {
				cfg.DataDir = dataDir
			}
			if flags.Changed("client-port") || configFile == "" {
				cfg.ClientPort = clientPort
			}
			if flags.Changed("client-addr") {
				cfg.ClientAddr = clientAddr
			}
			if flags.Changed("metrics-port") {
				cfg.MetricsPort = metricsPort
			}
			srv, err := server.New(cfg, logger)
			if err != nil {
				return err
			}
			if err := srv.Start(); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "giraffe: serving ZooKeeper clients on %s (data in %s)\n", srv.Addr(), cfg.DataDir)
			if a := srv.MetricsAddr(); a != nil {
				fmt.Fprintf(os.Stderr, "giraffe: metrics on http://%s/metrics\n", a)
			}
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			select {
			case s := <-sig:
				logger.Info("stopping", "signal", s.String())
			case <-srv.Done():
			}
			return srv.Close()
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "configuration file (Giraffe's or a ZooKeeper zoo.cfg)")
	f.StringVar(&dataDir, "data-dir", "", "directory for snapshots and the transaction log (required unless the config sets dataDir)")
	f.IntVar(&clientPort, "client-port", 2181, "ZooKeeper client port")
	f.StringVar(&clientAddr, "client-addr", "", "address to listen on (default: all)")
	f.IntVar(&metricsPort, "metrics-port", 0, "serve Prometheus metrics on this port at /metrics (0: off)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	return cmd
}

// newLogger returns a text logger on stderr at the given level.
func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}
