package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// leaderPoll is how often leader asks the members again while they have
// no leader they agree on.
const leaderPoll = 200 * time.Millisecond

func newLeaderCmd() *cobra.Command {
	var (
		endpoints string
		followers bool
		wait      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "leader",
		Short: "Print the endpoint of the member that leads (or, --followers, of those that follow)",
		Long: `Ask every endpoint for its status until all of them answer, name the same
leader and a put goes through, then print the leader's endpoint, or with
--followers the others' (comma-separated), as given in --endpoints. The
scripts use it to wait until a new cluster serves, and to put the
one-writer load on a follower, as they do for ZooKeeper and Giraffe.`,
		Example: `  etcd-peer leader --endpoints http://127.0.0.1:29181,http://127.0.0.1:29182,http://127.0.0.1:29183 --followers`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			eps := strings.Split(endpoints, ",")
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			leader, err := waitLeader(ctx, eps)
			if err != nil {
				return err
			}
			if !followers {
				fmt.Println(leader)
				return nil
			}
			var others []string
			for _, ep := range eps {
				if ep != leader {
					others = append(others, ep)
				}
			}
			fmt.Println(strings.Join(others, ","))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&endpoints, "endpoints", "", "every member's client URL, comma-separated")
	f.BoolVar(&followers, "followers", false, "print the members that follow instead")
	f.DurationVar(&wait, "wait", 30*time.Second, "how long to wait for a leader")
	_ = cmd.MarkFlagRequired("endpoints")
	return cmd
}

// waitLeader returns the endpoint of the member every endpoint names as
// leader, once a put has gone through, retrying until ctx ends.
func waitLeader(ctx context.Context, eps []string) (string, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", err
	}
	defer c.Close()
	var last error
	for {
		leader, err := agreedLeader(ctx, c, eps)
		if err == nil {
			_, err = c.Put(ctx, "/giraffe-bench/ready", "")
		}
		if err == nil {
			return leader, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no leader every member agrees on: %w", last)
		case <-time.After(leaderPoll):
		}
	}
}

// agreedLeader asks each endpoint for its status and returns the leader's
// endpoint if all answer and name the same one.
func agreedLeader(ctx context.Context, c *clientv3.Client, eps []string) (string, error) {
	var leaderID uint64
	ids := make(map[uint64]string, len(eps))
	for _, ep := range eps {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := c.Status(sctx, ep)
		cancel()
		if err != nil {
			return "", fmt.Errorf("%s: %w", ep, err)
		}
		switch {
		case st.Leader == 0:
			return "", fmt.Errorf("%s knows no leader", ep)
		case leaderID != 0 && st.Leader != leaderID:
			return "", fmt.Errorf("%s names leader %x, another %x", ep, st.Leader, leaderID)
		}
		leaderID = st.Leader
		ids[st.Header.MemberId] = ep
	}
	ep, ok := ids[leaderID]
	if !ok {
		return "", fmt.Errorf("the leader %x is none of the endpoints", leaderID)
	}
	return ep, nil
}
