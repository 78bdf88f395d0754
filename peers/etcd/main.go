// Command etcd-peer runs etcd beside Giraffe and ZooKeeper in the
// benchmark scripts, so that every published figure has both peers.
//
// It is a module of its own: etcd's server and its dependencies stay out
// of Giraffe's go.mod, and Giraffe's go vet and go test do not see it.
// Build it with `cd peers/etcd && go build -o ../../bin/etcd-peer .`
// (scripts/lib-etcd.sh does). Its subcommands:
//
//   - server: one etcd member through go.etcd.io/etcd/server/v3/embed,
//     with etcd's default settings (fsync on), until SIGTERM or SIGINT.
//     Each member is a process of its own, as the ZooKeeper and Giraffe
//     servers it is compared with are.
//   - load: puts of --value-size bytes through clientv3, closed loop
//     (--clients connections, --outstanding puts in flight on each), or
//     one synchronous writer (--one-writer); prints one JSON line shaped
//     like `giraffe bench --json`'s, with the members' CPU per put
//     (--pids), so the scripts summarize the three systems alike.
//   - leader: which member leads, or which follow, once one leads.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "etcd-peer",
		Short:         "etcd beside Giraffe in the benchmarks: its members, a load generator, its leader",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServerCmd(), newLoadCmd(), newLeaderCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "etcd-peer:", err)
		os.Exit(1)
	}
}
