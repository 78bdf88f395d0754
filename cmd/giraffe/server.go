package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/gcheadroom"
	"github.com/giraffe-coord/giraffe/internal/logging"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/server"
)

func newServerCmd() *cobra.Command {
	var (
		configFile    string
		dataDir       string
		clientPort    int
		clientAddr    string
		metricsPort   int
		adminPort     int
		tokenFile     string
		logOpts       logging.Options
		join          string
		joinID        uint64
		awaitReconfig bool
		strictConfig  bool
		peerPort      int
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a Giraffe server (standalone or an ensemble member)",
		Long: `Run a Giraffe server on the ZooKeeper client port: standalone, or a member
of a replicated ensemble when the config has server.N lines (see
docs/ensemble.md), or a new member of a running ensemble with --join.

Settings come from --config (Giraffe's own file or an existing ZooKeeper
zoo.cfg: dataDir, dataLogDir, clientPort, clientPortAddress, tickTime,
minSessionTimeout, maxSessionTimeout, maxClientCnxns, 4lw.commands.whitelist,
jute.maxbuffer, snapCount, autopurge.*, superDigest, extendedTypesEnabled,
reconfigEnabled, skipACL (reconfig only), enforceQuota, forceSync, metricsPort, the TLS keys secureClientPort, secureClientPortAddress,
ssl.*, sslQuorum and ssl.quorum.* (PEM stores; docs/security.md), and
Giraffe's giraffe.* keys), then from the flags, which win.

The metrics port is read-only. Membership changes (and, with
giraffe.faultInjection=true, fault injection) go to the admin port, which
opens only with a token file (--admin-token-file, mode 0600) and demands
that token on every request; it listens on 127.0.0.1 unless
giraffe.adminAddress says otherwise.

Every write is fsynced to the transaction log before it is acknowledged; a
restart recovers exactly the acknowledged state from the newest snapshot and
the log.`,
		Example: `  giraffe server --data-dir /tmp/giraffe --client-port 2181
  giraffe server --config /etc/zookeeper/zoo.cfg --metrics-port 7000
  giraffe server --data-dir /tmp/g10 --client-port 2190 --peer-port 3190 --admin-port 7290 \
    --admin-token-file /etc/giraffe/admin.token --join 127.0.0.1:7201`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, logFile, err := logOpts.New(os.Stderr)
			if err != nil {
				return err
			}
			defer logFile.Close()
			cfg := server.DefaultConfig()
			if configFile != "" {
				unused, err := server.LoadConfigFile(configFile, &cfg)
				if err != nil {
					return err
				}
				if len(unused.ZooKeeper) > 0 {
					logger.Info("ZooKeeper configuration keys Giraffe does not use", "keys", strings.Join(unused.ZooKeeper, ","))
				}
				for _, k := range unused.Unknown {
					args := []any{"key", k.Key, "file", configFile}
					if k.Suggestion != "" {
						args = append(args, "did_you_mean", k.Suggestion)
					}
					logger.Warn("unknown configuration key, ignored", args...)
				}
				if err := unused.Err(cfg.StrictConfig || strictConfig); err != nil {
					return fmt.Errorf("%s: %w", configFile, err)
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
			if flags.Changed("admin-port") {
				cfg.AdminPort = adminPort
			}
			if flags.Changed("admin-token-file") {
				cfg.AdminTokenFile = tokenFile
			}
			if join != "" && !server.HasJoined(cfg.DataDir) {
				switch {
				case cfg.DataDir == "":
					return fmt.Errorf("--join needs --data-dir")
				case peerPort <= 0 || cfg.AdminPort <= 0:
					return fmt.Errorf("--join needs --peer-port and --admin-port")
				case cfg.AdminTokenFile == "":
					return fmt.Errorf("--join needs the ensemble's admin token: --admin-token-file")
				}
			}
			start := func() (*server.Server, error) {
				if join != "" || server.HasJoined(cfg.DataDir) {
					return server.StartJoining(cmd.Context(), cfg,
						server.Join{Admin: join, ID: server.ID(joinID), PeerPort: peerPort, AwaitReconfig: awaitReconfig}, logger)
				}
				srv, err := server.New(cfg, logger)
				if err == nil {
					err = srv.Start()
				}
				return srv, err
			}
			gcCtx, stopGC := context.WithCancel(cmd.Context())
			defer stopGC()
			go gcheadroom.Run(gcCtx, uint64(cfg.GCHeadroomMB)<<20)
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			for {
				srv, err := start()
				if err != nil {
					return err
				}
				select {
				case s := <-sig:
					logger.Info("stopping", "signal", s.String())
					return srv.Close()
				case <-srv.Done():
				}
				// A member that found its state diverged stops to receive
				// it anew; starting it again is what does that.
				if err := srv.Close(); !errors.Is(err, server.ErrResync) {
					return err
				}
				logger.Info("starting again to receive this member's state from the ensemble")
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "configuration file (Giraffe's or a ZooKeeper zoo.cfg)")
	f.StringVar(&dataDir, "data-dir", "", "directory for snapshots and the transaction log (required unless the config sets dataDir)")
	f.IntVar(&clientPort, "client-port", 2181, "ZooKeeper client port")
	f.StringVar(&clientAddr, "client-addr", "", "address to listen on (default: all)")
	f.IntVar(&metricsPort, "metrics-port", 0, "serve Prometheus metrics on this port at /metrics, read-only (0: off)")
	f.IntVar(&adminPort, "admin-port", 0, "serve membership changes on this port, to holders of the admin token (giraffe.adminPort; 0: off)")
	f.StringVar(&tokenFile, "admin-token-file", "", "file holding the admin token, mode 0600 (giraffe.adminTokenFile); --join presents it")
	f.BoolVar(&strictConfig, "strict-config", false, "refuse to start when the config file has keys neither Giraffe nor ZooKeeper reads (giraffe.strictConfig)")
	logOpts.AddFlags(f)
	f.StringVar(&join, "join", "", "join a running ensemble through this member's admin port, host:port; needs --peer-port, --admin-port and --admin-token-file")
	f.Uint64Var(&joinID, "id", 0, "with --join: the server id to ask for (0: the leader picks the next free one)")
	f.BoolVar(&awaitReconfig, "await-reconfig", false, "with --join: start as a learner and wait for a ZooKeeper client's reconfig -add (the log gives the server string) instead of asking for the change")
	f.IntVar(&peerPort, "peer-port", 0, "with --join: this server's Group Paxos port")
	return cmd
}

// newLeaveCmd returns `giraffe leave`: ask the ensemble to remove a server.
func newLeaveCmd() *cobra.Command {
	var admin, tokenFile string
	cmd := &cobra.Command{
		Use:   "leave --admin HOST:PORT --admin-token-file FILE ID",
		Short: "Remove a server from a running ensemble",
		Long: `leave asks the ensemble's leader (reached through any member's admin port,
with the ensemble's admin token) to remove server ID: one configuration
change through the log, preceded, when the forest moves another server to
another group to keep the groups balanced, by that server's move. It returns
once the changes have committed; the removed server stops voting and can
then be stopped.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := members.ParseID(args[0])
			if err != nil || id == members.None {
				return fmt.Errorf("bad server id %q", args[0])
			}
			token, err := adminapi.ReadTokenFile(tokenFile)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 60*time.Second)
			defer cancel()
			info, err := adminapi.Client{Token: token}.Leave(ctx, []string{admin}, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "server %d left; groups now %v\n", id, info.Groups)
			return nil
		},
	}
	cmd.Flags().StringVar(&admin, "admin", "", "admin port of any member, host:port")
	cmd.Flags().StringVar(&tokenFile, "admin-token-file", "", "file holding the ensemble's admin token (mode 0600)")
	cmd.MarkFlagRequired("admin")
	cmd.MarkFlagRequired("admin-token-file")
	return cmd
}
