package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/recipes"
)

// newElectCmd returns `giraffe elect`, etcdctl elect's counterpart: campaign
// for leadership under PATH as NAME and print the leader as it changes.
func newElectCmd() *cobra.Command {
	var (
		servers   string
		listen    bool
		sessionTO time.Duration
	)
	cmd := &cobra.Command{
		Use:   "elect PATH [NAME]",
		Short: "Campaign for leadership under PATH, printing the leader as it changes",
		Long: `elect campaigns for leadership under PATH as NAME and prints the leader's name
each time it changes, until interrupted (Ctrl-C), which resigns. With
--listen it only watches and prints. The layout is kazoo's Election (a queue
lock whose nodes hold the candidates' names): kazoo candidates and giraffe
elect on the same path take part in one election.`,
		Example: `  giraffe elect --servers 127.0.0.1:2181 /election/db node-a
  giraffe elect --servers 127.0.0.1:2181 --listen /election/db`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !listen && len(args) != 2 {
				return fmt.Errorf("need PATH and NAME (or --listen PATH)")
			}
			path := args[0]
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			conn, err := client.Connect(ctx, strings.Split(servers, ","), client.WithSessionTimeout(sessionTO))
			if err != nil {
				return err
			}
			defer conn.Close()
			out := cmd.OutOrStdout()
			var lock *recipes.QueueLock
			if !listen {
				lock = recipes.NewQueueLock(conn, path, recipes.WithIdentifier([]byte(args[1])))
				go func() {
					if err := lock.Lock(ctx); err == nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "giraffe elect: %s is elected\n", args[1])
					}
				}()
			}
			err = watchLeader(ctx, conn, path, func(leader string) {
				if leader == "" {
					leader = "(no leader)"
				}
				fmt.Fprintln(out, leader)
			})
			if lock != nil {
				uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				lock.Unlock(uctx) // resign (a no-op unless elected)
			}
			if ctx.Err() != nil {
				return nil
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "servers", "127.0.0.1:2181", "comma-separated host:port list")
	f.BoolVar(&listen, "listen", false, "only print the leader as it changes; do not campaign")
	f.DurationVar(&sessionTO, "session-timeout", 10*time.Second, "session timeout")
	return cmd
}

// watchLeader calls show with the leader's name (empty: none) whenever it
// changes, until ctx ends.
func watchLeader(ctx context.Context, conn *client.Conn, path string, show func(string)) error {
	last := "\x00"
	for {
		cs, w, err := recipes.LockContenders(ctx, conn, path)
		if err != nil {
			return err
		}
		leader := ""
		if len(cs) > 0 {
			leader = cs[0]
		}
		if leader != last {
			show(leader)
			last = leader
		}
		select {
		case <-w:
		case <-ctx.Done():
			return nil
		}
	}
}
