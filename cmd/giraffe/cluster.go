package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

const defaultClusterDir = "giraffe-cluster"

// newClusterCmd returns `giraffe cluster`: a local ensemble of server
// processes on 127.0.0.1.
func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start, inspect and stop a local Giraffe ensemble (server processes on 127.0.0.1)",
	}
	cmd.AddCommand(newClusterStartCmd(), newClusterStatusCmd(), newClusterKillCmd(), newClusterRestartCmd(),
		newClusterStopCmd(), newClusterFaultCmd(), newClusterJoinCmd(), newClusterLeaveCmd())
	return cmd
}

func newClusterJoinCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "join",
		Short: "Start one more server and add it to the running ensemble",
		Long: `join starts a new server process (giraffe server --join) on the next free
ports and waits until it serves: the leader adds it to the group the forest
gives it, by one configuration change through the log.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := launcher.Load(dir)
			if err != nil {
				return err
			}
			s, err := c.Join(60 * time.Second)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "server %d joined: client %s, data and log in %s\n", s.ID, s.ClientAddr, s.Dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultClusterDir, "the cluster's directory")
	return cmd
}

func newClusterLeaveCmd() *cobra.Command {
	return clusterIDCmd("leave", "Remove one server from the ensemble (through the log), then stop it",
		func(c *launcher.Cluster, id members.ID) error { return c.Leave(id, 60*time.Second) })
}

func newClusterStartCmd() *cobra.Command {
	var spec launcher.Spec
	var wait time.Duration
	var foreground bool
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start N servers and wait for a leader",
		Long: `start writes a zoo.cfg per server under --dir, starts the servers as
background processes (they keep running after this command returns) and
waits until they agree on a global leader. Server i serves clients on
base-port+i-1, its peers on base-port+nodes+i-1, metrics (/metrics,
read-only) on base-port+2*nodes+i-1 and its admin port (membership changes,
fault injection) on base-port+3*nodes+i-1, on 127.0.0.1. The admin port
demands the token start writes to DIR/admin.token (mode 0600), which join,
leave and fault read from there. Fault injection is off unless
--fault-injection is given. When a server exits during start-up (a port
taken, a bad --set line) or no leader comes within --wait, start exits with
status 1 and the end of that server's log; the servers that started keep
running until cluster stop. --nodes 1 starts one standalone server.

A stopped cluster in --dir starts again with its data when it is started
the same way (nodes, shape, base port, --tls); start refuses another shape
there, since the servers' logs hold the old membership, unless --force,
which deletes the old servers' data first.

With --tls, start makes a throw-away certificate authority in DIR/tls
(ca.pem, its key, and client.pem, a client's key and certificate) and a
certificate per server (DIR/s<id>/server.pem); every server then also
serves TLS clients on base-port+4*nodes+i-1, requiring a client
certificate the authority signed (ssl.clientAuth=need), and talks to its
peers over mutual TLS (sslQuorum=true). The plain client ports stay open.`,
		Example: `  giraffe cluster start --nodes 9 --trees 3 --children 3
  giraffe cluster start --nodes 3 --classic --dir /tmp/g3 --base-port 3181
  giraffe cluster start --nodes 3 --classic --fault-injection   # tests: allows cluster fault
  giraffe cluster start --nodes 3 --classic --tls               # secure client ports, TLS between peers`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := launcher.Start(spec, wait)
			if c == nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "connect string: %s\n", c.ConnectString())
			fmt.Fprintf(out, "data and logs:  %s/s<id>/{data,server.log,zoo.cfg}\n", c.Spec.Dir)
			fmt.Fprintf(out, "web console:    %s (every server serves one: `cluster status --json`)\n", c.Servers[0].ConsoleURL())
			shape := fmt.Sprintf("%d servers, forest %d-%d", spec.Nodes, spec.Trees, spec.Children)
			switch {
			case spec.Nodes == 1:
				shape = "1 server, standalone"
			case spec.Classic:
				shape = fmt.Sprintf("%d servers, classic (one group, star)", spec.Nodes)
			}
			fmt.Fprintf(out, "%s; `giraffe cluster status --dir %s` shows roles\n", shape, c.Spec.Dir)
			if spec.TLS {
				f := launcher.TLSFilesIn(c.Spec.Dir)
				fmt.Fprintf(out, "TLS connect string: %s (client certificate required; peers use mutual TLS)\n", c.SecureConnectString())
				fmt.Fprintf(out, "  trust store %s, client key store %s (x509:%s)\n", f.CA, f.Client, f.ClientSubject)
				fmt.Fprintf(out, "  kazoo: KazooClient(hosts, use_ssl=True, ca=%q, certfile=%q, keyfile=%q)\n", f.CA, f.Client, f.Client)
			}
			if err != nil || !foreground {
				return err
			}
			fmt.Fprintln(out, "running in the foreground: Ctrl-C stops the ensemble")
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			<-sig
			fmt.Fprintln(out, "stopping the ensemble")
			return c.Stop(10 * time.Second)
		},
	}
	f := cmd.Flags()
	f.IntVar(&spec.Nodes, "nodes", 9, "number of servers")
	f.IntVar(&spec.Trees, "trees", 3, "number of groups (trees of the forest)")
	f.IntVar(&spec.Children, "children", 3, "maximum children per server in a group's tree")
	f.BoolVar(&spec.Classic, "classic", false, "classic mode: one group with a star (leader-centric, like Zab)")
	f.StringVar(&spec.Dir, "dir", defaultClusterDir, "directory for the servers' configuration, data and logs")
	f.IntVar(&spec.BasePort, "base-port", 2181, "client port of server 1")
	f.BoolVar(&spec.NoSync, "no-sync", false, "turn fsync off (tests only: acknowledged writes can be lost on a machine crash)")
	f.BoolVar(&spec.FaultInjection, "fault-injection", false, "let `cluster fault` inject faults into the servers (tests only)")
	f.BoolVar(&spec.TLS, "tls", false, "make a throw-away certificate authority; secure client ports and TLS between peers")
	f.DurationVar(&wait, "wait", 30*time.Second, "how long to wait for a leader")
	f.BoolVar(&foreground, "foreground", false, "stay in the foreground and stop the ensemble on Ctrl-C")
	f.BoolVar(&spec.Force, "force", false, "when --dir holds a stopped cluster of another shape, delete its data and start afresh")
	f.StringArrayVar(&spec.Extra, "set", nil, "extra zoo.cfg line for every server, key=value (repeatable)")
	f.IntVar(&spec.TickMs, "tick-ms", 0, "protocol tick in ms (0: the server's default, 25)")
	return cmd
}

func newClusterStatusCmd() *cobra.Command {
	var dir string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every server's role, group (color), zxid, committed membership and process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := launcher.Load(dir)
			if err != nil {
				return err
			}
			rows := c.Status()
			out := cmd.OutOrStdout()
			if jsonOut {
				type row struct {
					ID      members.ID `json:"id"`
					Address string     `json:"address"`
					Secure  string     `json:"secure_address,omitempty"`
					Color   int        `json:"color"`
					Role    string     `json:"role"`
					Zxid    int64      `json:"zxid"`
					Alive   bool       `json:"alive"`
					PID     int        `json:"pid"`
					Serving bool       `json:"serving"`
					Console string     `json:"console"`
					Member  string     `json:"member"`
				}
				list := make([]row, len(rows))
				for i, r := range rows {
					list[i] = row{r.ID, r.Address, r.SecureAddress, r.Color, r.Role, r.Zxid, r.Alive, r.PID, r.Serving, r.Console, r.Member}
				}
				b, err := json.Marshal(list)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(b))
				return nil
			}
			tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			secure := c.SecureConnectString() != ""
			if secure {
				fmt.Fprint(tw, "ID\tADDRESS\tTLS ADDRESS\tCOLOR\tROLE\tMODE\tZXID\tVOTES\tMEMBER\tALIVE\tPID\n")
			} else {
				fmt.Fprintln(tw, "ID\tADDRESS\tCOLOR\tROLE\tMODE\tZXID\tVOTES\tMEMBER\tALIVE\tPID")
			}
			for _, r := range rows {
				color := "-"
				if r.Color >= 0 {
					color = strconv.Itoa(r.Color)
				}
				votes := r.Registration
				if votes == "" {
					votes = "-"
				}
				mode := r.Mode
				if r.Alive && !r.Serving && r.Role != "unreachable" {
					mode = "not serving"
				}
				addr := r.Address
				if secure {
					addr += "\t" + r.SecureAddress
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t0x%x\t%s\t%s\t%v\t%d\n", r.ID, addr, color, r.Role, mode, r.Zxid, votes, r.Member, r.Alive, r.PID)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultClusterDir, "the cluster's directory")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print a JSON list")
	return cmd
}

// clusterIDCmd builds kill and restart, which take one server id.
func clusterIDCmd(use, short string, do func(c *launcher.Cluster, id members.ID) error) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := members.ParseID(args[0])
			if err != nil {
				return fmt.Errorf("server id %q: %w", args[0], err)
			}
			c, err := launcher.Load(dir)
			if err != nil {
				return err
			}
			return do(c, id)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultClusterDir, "the cluster's directory")
	return cmd
}

func newClusterKillCmd() *cobra.Command {
	return clusterIDCmd("kill", "Kill one server with SIGKILL", func(c *launcher.Cluster, id members.ID) error { return c.Kill(id) })
}

func newClusterRestartCmd() *cobra.Command {
	return clusterIDCmd("restart", "Start one server again (killing it first if it runs); fail, with its log's end, if it does not come up",
		func(c *launcher.Cluster, id members.ID) error {
			if err := c.Restart(id); err != nil {
				return err
			}
			return c.WaitStarted(id, 30*time.Second)
		})
}

func newClusterFaultCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "fault ID SPEC",
		Short: "Inject network faults into one server's peer transport (for tests)",
		Long: `fault changes the faults of server ID's peer transport and prints the faults
now in force, through the server's admin port with the cluster's token. The
servers take faults only when the cluster was started with
` + "`cluster start --fault-injection`" + `. SPEC is ';'-separated: "drop PEER P" loses messages to PEER with
probability P, "delay PEER D [JITTER]" holds them, "block PEER [in|out|both]" /
"unblock PEER [DIR]" cut or restore a direction (default out), "isolate" cuts
every link, "pause" / "resume" hold all traffic, "slowsnap PEER D" holds each
snapshot received from PEER for D (the other messages pass it), "heal"
removes every fault.`,
		Example: `  giraffe cluster fault 1 isolate
  giraffe cluster fault 2 "block 3; delay 4 50ms"
  giraffe cluster fault 1 heal`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := members.ParseID(args[0])
			if err != nil {
				return fmt.Errorf("server id %q: %w", args[0], err)
			}
			c, err := launcher.Load(dir)
			if err != nil {
				return err
			}
			now, err := c.Fault(id, args[1])
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), now)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultClusterDir, "the cluster's directory")
	return cmd
}

func newClusterStopCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop every server (SIGTERM, then SIGKILL after 10 s)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := launcher.Load(dir)
			if err != nil {
				return err
			}
			return c.Stop(10 * time.Second)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultClusterDir, "the cluster's directory")
	return cmd
}
