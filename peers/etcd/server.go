package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/embed"
)

// startTimeout bounds how long a member may take to join its cluster:
// the others are started beside it by the same script, so a minute means
// something is wrong.
const startTimeout = time.Minute

func newServerCmd() *cobra.Command {
	var (
		name, dir, clientURL, peerURL, cluster, token, logLevel string
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run one etcd member (embed, default settings, fsync on) until SIGTERM",
		Long: `Run one member of a new etcd cluster through go.etcd.io/etcd/server/v3/embed.

Everything but the member's name, directory, URLs and cluster is etcd's
default (fsync of the WAL and the backend on, snapshot count, heartbeat
and election timeouts), so that the figures are those of etcd as it ships.
Only the log level is lowered to warn, by default, so that the log does
not cost CPU the other systems do not spend.`,
		Example: `  etcd-peer server --name e1 --dir /tmp/e1 --client-url http://127.0.0.1:29181 \
    --peer-url http://127.0.0.1:29191 \
    --initial-cluster e1=http://127.0.0.1:29191,e2=http://127.0.0.1:29192,e3=http://127.0.0.1:29193`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg := embed.NewConfig()
			cfg.Name, cfg.Dir = name, dir
			cfg.InitialCluster, cfg.InitialClusterToken = cluster, token
			cfg.ClusterState = embed.ClusterStateFlagNew
			cfg.LogLevel = logLevel
			cu, err := url.Parse(clientURL)
			if err != nil {
				return fmt.Errorf("--client-url: %w", err)
			}
			pu, err := url.Parse(peerURL)
			if err != nil {
				return fmt.Errorf("--peer-url: %w", err)
			}
			cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
			cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
			return serve(cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the member's name, as in --initial-cluster")
	f.StringVar(&dir, "dir", "", "the member's data directory")
	f.StringVar(&clientURL, "client-url", "", "URL clients connect to (listened on and advertised)")
	f.StringVar(&peerURL, "peer-url", "", "URL the other members connect to (listened on and advertised)")
	f.StringVar(&cluster, "initial-cluster", "", "every member, name=peer-url, comma-separated")
	f.StringVar(&token, "initial-cluster-token", "giraffe-bench", "the new cluster's token")
	f.StringVar(&logLevel, "log-level", "warn", "etcd's log level (debug, info, warn, error)")
	for _, req := range []string{"name", "dir", "client-url", "peer-url", "initial-cluster"} {
		_ = cmd.MarkFlagRequired(req)
	}
	return cmd
}

// serve starts the member and runs it until a signal asks it to stop or
// it fails.
func serve(cfg *embed.Config) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(startTimeout):
		return errors.New("the member did not join its cluster in time")
	case s := <-sig:
		return fmt.Errorf("stopped by %v while starting", s)
	}
	select {
	case <-sig:
		return nil
	case err := <-e.Err():
		return err
	}
}
