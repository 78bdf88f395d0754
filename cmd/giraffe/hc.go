package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/hc/local"
	"github.com/giraffe-coord/giraffe/hc/master"
	"github.com/giraffe-coord/giraffe/hc/plan"
	"github.com/giraffe-coord/giraffe/internal/cli"
	"github.com/giraffe-coord/giraffe/internal/logging"
)

// newHCCmd returns `giraffe hc`: the hierarchical lock service
// (docs/hierarchical-locks.md), a lock service spread over a master
// ensemble and worker ensembles.
func newHCCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hc",
		Short: "The hierarchical lock service: locks spread over a master ensemble and worker ensembles",
		Long: `hc runs and uses the hierarchical lock service (Hierarchical Chubby over
ZooKeeper-compatible ensembles; docs/hierarchical-locks.md). A master ensemble
maps every lock to the worker ensemble that holds it; a daemon, elected among
its instances, recruits standby workers and moves locks between workers.

On one machine, hc start starts a master, workers and a daemon as processes
(hc stop stops them). Elsewhere: hc init, then hc register for every worker
ensemble, then run hc daemon (one or more). Use: hc create-domain,
hc create-lock, hc acquire, hc validate, hc status.`,
	}
	cmd.AddCommand(newHCStartCmd(), newHCStopCmd(), newHCInitCmd(), newHCRegisterCmd(), newHCDaemonCmd(),
		newHCCreateCmd("create-domain"), newHCCreateCmd("create-lock"), newHCAcquireCmd(), newHCValidateCmd(),
		newHCStatusCmd(), newHCRebalanceCmd(), newHCMoveCmd())
	return cmd
}

// hcFlags are the flags every hc subcommand shares.
type hcFlags struct {
	master, dir string
	sessionTO   time.Duration
}

func (f *hcFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.master, "master", "127.0.0.1:2181", "the master ensemble's servers, comma-separated host:port")
	cmd.Flags().StringVar(&f.dir, "dir", "", "a service started by hc start: its master (instead of --master)")
	cmd.Flags().DurationVar(&f.sessionTO, "session-timeout", 10*time.Second, "session timeout")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if f.dir == "" {
			return nil
		}
		s, err := local.Load(f.dir)
		if err != nil {
			return err
		}
		f.master = s.Master.Connect
		return nil
	}
}

func (f *hcFlags) servers() []string { return strings.Split(f.master, ",") }

func newHCStartCmd() *cobra.Command {
	var spec local.Spec
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start a local lock service: a master, worker ensembles and a daemon, as processes",
		Long: `start starts, on 127.0.0.1, a master ensemble, --workers active and --standby
standby worker ensembles (classic ensembles of --nodes servers; ensemble k,
the master being 0, takes its ports from --base-port + 100k), sets up the
master, registers the workers and starts a daemon; it prints the master's
connect string. Everything lives under --dir; the processes outlive this
command until hc stop --dir.`,
		Example: `  giraffe hc start --dir /tmp/hc --workers 1 --standby 2 --threshold 100
  giraffe hc status --dir /tmp/hc`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := plan.ParseMode(spec.Split); err != nil {
				return err
			}
			s, err := local.Start(spec, 60*time.Second)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), s.Master.Connect)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Dir, "dir", "giraffe-hc", "directory for the ensembles, the daemon's log and hc.json")
	f.IntVar(&spec.Workers, "workers", 1, "active worker ensembles")
	f.IntVar(&spec.Standby, "standby", 1, "standby worker ensembles")
	f.IntVar(&spec.Nodes, "nodes", 3, "servers per ensemble")
	f.IntVar(&spec.Threshold, "threshold", 1000, "the daemon's lock-count threshold")
	f.StringVar(&spec.Split, "split", "domain", "the daemon's split: domain or equal")
	f.IntVar(&spec.BasePort, "base-port", 2181, "the master's first port")
	return cmd
}

func newHCStopCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop a lock service started by hc start",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := local.Load(dir)
			if err != nil {
				return err
			}
			return s.Stop(5 * time.Second)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "giraffe-hc", "the service's directory")
	return cmd
}

// connect opens an administrative session on the master.
func (f *hcFlags) connect(ctx context.Context) (*client.Conn, error) {
	return client.Connect(ctx, f.servers(), client.WithSessionTimeout(f.sessionTO))
}

// lockClient opens a lock client.
func (f *hcFlags) lockClient(ctx context.Context, opts ...hc.Option) (*hc.Client, error) {
	opts = append(opts, hc.WithWorkerOptions(client.WithSessionTimeout(f.sessionTO)))
	return hc.NewClient(ctx, f.servers(), opts...)
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func newHCInitCmd() *cobra.Command {
	var f hcFlags
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the service's layout in the master ensemble",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext()
			defer stop()
			conn, err := f.connect(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			return master.Init(ctx, conn)
		},
	}
	f.add(cmd)
	return cmd
}

func newHCRegisterCmd() *cobra.Command {
	var (
		f        hcFlags
		id, addr string
		standby  bool
	)
	cmd := &cobra.Command{
		Use:   "register",
		Short: "Register a worker ensemble, active or standby",
		Long: `register adds a worker ensemble to the master's registry. An active worker
takes locks at once (the first one registered holds the root domain); a
standby waits until the daemon recruits it.`,
		Example: `  giraffe hc register --master 127.0.0.1:2181 --id w1 --connect 127.0.0.1:2281,127.0.0.1:2282,127.0.0.1:2283`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext()
			defer stop()
			conn, err := f.connect(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			state := layout.Active
			if standby {
				state = layout.Standby
			}
			return master.Register(ctx, conn, id, addr, state)
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&id, "id", "", "the worker's id (letters, digits, _ . -)")
	cmd.Flags().StringVar(&addr, "connect", "", "the worker's connect string")
	cmd.Flags().BoolVar(&standby, "standby", false, "register as a standby (recruited by the daemon when needed)")
	cmd.MarkFlagRequired("id")
	cmd.MarkFlagRequired("connect")
	return cmd
}

func newHCDaemonCmd() *cobra.Command {
	var (
		f                 hcFlags
		name, split, exit string
		threshold         int
		logOpts           logging.Options
	)
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run a master daemon: elected among its instances, it recruits workers and moves locks",
		Long: `daemon campaigns for leadership among the daemons of the master ensemble and,
while elected, executes every move recorded in the master and, when an
active worker holds more than --threshold locks, recruits a standby and
moves part of the worker's locks to it. Run several for availability: when
the leader dies, another takes over once its master session has expired,
and resumes the moves where they stand.

--exit-at PHASE exits at once (status 3, sessions left to expire, as a
crash) right after a move records PHASE; PHASE:acted exits right after the
worker action that leads to PHASE, before it is recorded. It is for tests.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode, err := plan.ParseMode(split)
			if err != nil {
				return err
			}
			hook, err := exitHook(exit)
			if err != nil {
				return err
			}
			if name == "" {
				host, _ := os.Hostname()
				name = fmt.Sprintf("%s-%d", host, os.Getpid())
			}
			ctx, stop := signalContext()
			defer stop()
			log, logFile, err := logOpts.New(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer logFile.Close()
			return master.Run(ctx, master.Config{Master: f.servers(), Name: name, Threshold: threshold, Split: mode,
				SessionOptions: []client.Option{client.WithSessionTimeout(f.sessionTO)}, Log: log, AfterStep: hook})
		},
	}
	f.add(cmd)
	logOpts.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&name, "name", "", "this daemon's name in the election (default host-pid)")
	cmd.Flags().IntVar(&threshold, "threshold", 1000, "lock count above which a worker is split (0: never)")
	cmd.Flags().StringVar(&split, "split", "domain", "how an overloaded worker's locks are split: domain (whole domains) or equal (halves)")
	cmd.Flags().StringVar(&exit, "exit-at", "", "exit as if crashed at this point of the first move that reaches it: PHASE or PHASE:acted")
	return cmd
}

// exitHook parses --exit-at into a step hook that exits the process.
func exitHook(spec string) (func(master.Point) error, error) {
	if spec == "" {
		return nil, nil
	}
	name, acted := strings.CutSuffix(spec, ":acted")
	ph, err := layout.ParsePhase(name)
	if err != nil {
		return nil, err
	}
	return func(p master.Point) error {
		if p.Phase == ph && p.Recorded == !acted {
			fmt.Fprintf(os.Stderr, "giraffe hc daemon: exiting at %s of the move of %s\n", spec, p.Lock)
			os.Exit(3)
		}
		return nil
	}, nil
}

func newHCCreateCmd(use string) *cobra.Command {
	var f hcFlags
	what := "lock"
	if use == "create-domain" {
		what = "domain"
	}
	cmd := &cobra.Command{
		Use:   use + " PATH...",
		Short: fmt.Sprintf("Create %ss (their domain must exist)", what),
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext()
			defer stop()
			c, err := f.lockClient(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			for _, p := range args {
				if what == "domain" {
					err = c.CreateDomain(ctx, p)
				} else {
					err = c.CreateLock(ctx, p)
				}
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

func newHCAcquireCmd() *cobra.Command {
	var (
		f         hcFlags
		try       bool
		timeout   time.Duration
		lockDelay time.Duration
	)
	cmd := &cobra.Command{
		Use:   "acquire PATH [-- COMMAND ARGS...]",
		Short: "Acquire a lock, run a command holding it, release it",
		Long: `acquire takes the lock at PATH, runs COMMAND with the hold's sequencer in
GIRAFFE_HC_SEQUENCER, releases the lock when the command exits and exits with
the command's status. Without a command it prints the sequencer and holds the
lock until interrupted. With --try it fails (status 2) at once if the lock is
held. If the worker session ends while the command runs, the lock is lost:
acquire kills the command. --lock-delay is what the next holder waits if this
one's session ends without a release (Chubby's lock-delay).`,
		Example: `  giraffe hc acquire --master 127.0.0.1:2181 /jobs/backup -- ./backup.sh`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, command := args[0], args[1:]
			ctx, stop := signalContext()
			defer stop()
			c, err := f.lockClient(ctx, hc.WithLockDelay(lockDelay))
			if err != nil {
				return err
			}
			defer c.Close()
			actx := ctx
			if timeout > 0 {
				var cancel context.CancelFunc
				actx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			var h *hc.Hold
			if try {
				h, err = c.TryAcquire(actx, path)
			} else {
				h, err = c.Acquire(actx, path)
			}
			if errors.Is(err, hc.ErrHeld) {
				return &cli.ExitError{Code: 2, Err: err}
			}
			if err != nil {
				return fmt.Errorf("acquiring %s: %w", path, err)
			}
			seq := h.Sequencer().String()
			fmt.Fprintln(cmd.ErrOrStderr(), "giraffe hc: acquired", seq)
			release := func() {
				rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := h.Release(rctx); err != nil {
					fmt.Fprintln(os.Stderr, "giraffe hc: releasing:", err)
				}
			}
			if len(command) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), seq)
				select {
				case <-ctx.Done():
				case <-h.Lost():
					return errors.New("the worker session ended: the lock is lost")
				}
				release()
				return nil
			}
			os.Setenv("GIRAFFE_HC_SEQUENCER", seq)
			return runHolding(h.Lost(), "giraffe hc", command, release)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&try, "try", false, "fail at once (status 2) if the lock is held")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up acquiring after this long (0: wait forever)")
	cmd.Flags().DurationVar(&lockDelay, "lock-delay", hc.DefaultLockDelay, "lock-delay after this hold ends with its session")
	return cmd
}

func newHCValidateCmd() *cobra.Command {
	var f hcFlags
	cmd := &cobra.Command{
		Use:   "validate SEQUENCER",
		Short: "Check a sequencer: exit 0 if its hold is in force, 1 if not",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := hc.ParseSequencer(args[0])
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			c, err := f.lockClient(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			ok, err := c.Validate(ctx, seq)
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintln(cmd.OutOrStdout(), "invalid")
				return cli.ErrSilent
			}
			fmt.Fprintln(cmd.OutOrStdout(), "valid")
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

func newHCStatusCmd() *cobra.Command {
	var (
		f           hcFlags
		asJSON, aud bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the worker ensembles, their lock counts and the moves in progress",
		Long: `status prints the registry of worker ensembles with their states and lock
counts, and the moves in progress (recalcitrant ones wait for a holder).
--audit also compares the master's maps with every worker's copies and exits
1 if they disagree (moves in progress count as disagreements).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext()
			defer stop()
			conn, err := f.connect(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			st, err := master.ReadStatus(ctx, conn)
			if err != nil {
				return err
			}
			st.Master = f.master
			if st.Daemon, err = master.Leader(ctx, conn); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(st); err != nil {
					return err
				}
			} else {
				printHCStatus(out, st)
			}
			if !aud {
				return nil
			}
			problems, err := master.Audit(ctx, conn, client.WithSessionTimeout(f.sessionTO))
			if err != nil {
				return err
			}
			for _, p := range problems {
				fmt.Fprintln(cmd.ErrOrStderr(), "audit:", p)
			}
			if len(problems) > 0 {
				return cli.ErrSilent
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "audit: the master and the workers agree")
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&aud, "audit", false, "compare the master with the workers; exit 1 if they disagree")
	return cmd
}

func printHCStatus(out io.Writer, st master.Status) {
	daemon := st.Daemon
	if daemon == "" {
		daemon = "(none running)"
	}
	fmt.Fprintf(out, "master %s, daemon %s\n", st.Master, daemon)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSTATE\tLOCKS\tCONNECT")
	for _, c := range st.Clusters {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", c.ID, c.State, c.Locks, c.Connect)
	}
	tw.Flush()
	fmt.Fprintf(out, "moving %d, recalcitrant %d\n", st.Moving, st.Recalcitrant)
	for _, m := range st.Moves {
		fmt.Fprintf(out, "  %s: %s -> %s, %s\n", m.Lock, m.From, m.To, m.Phase)
	}
}

func newHCRebalanceCmd() *cobra.Command {
	var (
		f               hcFlags
		from, to, split string
	)
	cmd := &cobra.Command{
		Use:   "rebalance",
		Short: "Move part of a worker's locks to another (a standby is recruited)",
		Long: `rebalance plans moving part of worker --from's locks, split as --split says,
to worker --to (default: the first standby, which is recruited), whatever
the threshold. The daemon executes the moves; hc status shows them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode, err := plan.ParseMode(split)
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			conn, err := f.connect(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			if to == "" {
				st, err := master.ReadStatus(ctx, conn)
				if err != nil {
					return err
				}
				for _, c := range st.Clusters {
					if c.State == layout.Standby {
						to = c.ID
						break
					}
				}
				if to == "" {
					return errors.New("no standby worker to recruit; name one with --to")
				}
			}
			moved, err := master.Rebalance(ctx, conn, from, to, mode)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "moving %d locks from %s to %s\n", len(moved), from, to)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&from, "from", "", "the worker to take locks from")
	cmd.Flags().StringVar(&to, "to", "", "the worker to move them to (default: the first standby)")
	cmd.Flags().StringVar(&split, "split", "domain", "domain (whole domains) or equal (halves)")
	cmd.MarkFlagRequired("from")
	return cmd
}

func newHCMoveCmd() *cobra.Command {
	var (
		f  hcFlags
		to string
	)
	cmd := &cobra.Command{
		Use:   "move --to CLUSTER LOCK...",
		Short: "Move locks to a worker (held ones move once released)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext()
			defer stop()
			conn, err := f.connect(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			moved, err := master.MoveLocks(ctx, conn, args, to)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "moving %d locks to %s\n", len(moved), to)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&to, "to", "", "the worker to move the locks to")
	cmd.MarkFlagRequired("to")
	return cmd
}
