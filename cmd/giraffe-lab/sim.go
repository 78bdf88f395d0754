package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/giraffe-coord/giraffe/internal/cli"
	"github.com/giraffe-coord/giraffe/sim"
	"github.com/spf13/cobra"
)

// newSimCmd returns `giraffe-lab sim`: one deterministic simulation of a Group
// Paxos ensemble under faults, checked for agreement, durability, invariants
// and linearizability. The exit status says how it failed: 2 correctness,
// 3 liveness, 4 crash, 5 a linearizability check that could not decide.
func newSimCmd() *cobra.Command {
	var (
		o          sim.Options
		history    string
		jsonOut    bool
		verbose    bool
		safetyMS   int64
		livenessMS int64
		bench      benchFlags
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run a deterministic, fault-injected simulation of Group Paxos",
		Long: `sim runs one seeded simulation: a safety phase under faults (loss, delay,
partitions, crashes that lose unsynced writes, restarts, pauses), then a
liveness phase on a healed network that must converge. Any seed replays
exactly. The seed and every parameter are printed first (to stderr with --json).
Exit status: 0 ok, 2 correctness failure, 3 liveness failure, 4 crash,
5 undecided (the linearizability check could not decide the history).

With --bench, sim instead times a fault-free ensemble under a closed-loop
write load with the calibrated cost model (each server a single queue paying
CPU per message and per byte, its network interface a queue of its own, link
latency, fsync) and reports write throughput, latency, CPU use and messages
per commit (with --json also what the leader, a coordinator and an
acceptor receive and send per commit, in messages and bytes). With
--failover gl|gc it crashes the global leader or a group coordinator of a
settled ensemble and reports the virtual time to recover.
With --delivery interior|coordinator --crash K it crashes K interior members
or coordinators of as many groups at once and reports which live servers
stop applying new commits, and for how long.
--calibrate measures the cost model on the real transport and log.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if bench.calibrate {
				return runCalibrate(cmd, bench)
			}
			if o.Nodes < 1 || (!o.Classic && (o.Trees < 1 || o.Children < 1)) {
				return errors.New("need --nodes >= 1 and, unless --classic, --trees and --children >= 1")
			}
			if bench.bench || bench.failover != "" || bench.delivery != "" {
				return runSimBench(cmd, o, bench, jsonOut)
			}
			o.SafetyUS, o.LivenessUS = safetyMS*1000, livenessMS*1000
			var paramsOut io.Writer = cmd.OutOrStdout()
			if jsonOut {
				paramsOut = cmd.ErrOrStderr()
			}
			r := sim.Run(o, paramsOut, verbose)
			if history != "" {
				if err := writeHistory(history, r); err != nil {
					return err
				}
			}
			if jsonOut {
				b, err := json.Marshal(r)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "ok=%v commits=%d ops=%d ops_ok=%d ops_unknown=%d unknown_committed=%d messages=%d conf_changes=%d linearizable=%s virtual_ms=%d lock_acquires=%d sessions_expired=%d local_reads=%d\n",
					r.OK, r.Commits, r.Ops, r.OpsOK, r.OpsUnknown, r.UnknownCommitted, r.Messages, r.ConfChanges, r.Linearizable, r.VirtualMS, r.LockAcquires, r.SessionsExpired, r.LocalReads)
			}
			if !r.OK {
				return &cli.ExitError{Code: r.ExitCode(), Err: fmt.Errorf("sim seed %d: %s failure: %s", r.Seed, r.Kind, r.Failure)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.Seed, "seed", 1, "seed of the run; the same seed replays the same run")
	f.IntVar(&o.Nodes, "nodes", 9, "number of servers")
	f.IntVar(&o.Trees, "trees", 3, "number of groups (trees of the forest)")
	f.IntVar(&o.Children, "children", 3, "maximum children per server in a group's tree")
	f.BoolVar(&o.Classic, "classic", false, "classic mode: one group, star topology (leader-centric, like Zab)")
	f.BoolVar(&o.Swarm, "swarm", false, "swarm mode: the seed also picks which faults are enabled")
	f.IntVar(&o.Clients, "clients", 0, "number of clients (0: chosen by the seed)")
	f.IntVar(&o.MaxBatch, "max-batch", 0, "entries per append (0: 256); small values stress catch-up")
	f.BoolVar(&o.Reconfig, "reconfig", false, "add configuration changes to the faults: servers removed, fresh spares added (docs/protocol.md §10); in swarm mode the seed decides unless this or --no-reconfig is given")
	f.BoolVar(&o.NoReconfig, "no-reconfig", false, "swarm mode: never add configuration changes")
	f.StringSliceVar(&o.Without, "without", nil, "fault kinds the run may not draw: in swarm mode duplicate, skew, stall, bigsnap, disk, sessions, localreads, weak; with --disk-faults wipe, hardstate, tail, snapshot")
	f.BoolVar(&o.DiskFaults, "disk-faults", false, "restarts may find the disk wiped, the hard state lost, the log's last records damaged or the newest snapshot corrupt in every run (in swarm mode the seed picks which); without it swarm mode draws them in one run in two")
	f.BoolVar(&o.Sessions, "sessions", false, "add the session layer to every run: lock clients whose sessions the leader expires, servers that serve only with proof of quorum contact, and a checker that no two connected clients hold the lock (in swarm mode the seed draws it one run in two)")
	f.BoolVar(&o.NoServingGuard, "no-serving-guard", false, "with the session layer, let servers serve without proof of quorum contact (shows what the lock checker catches)")
	f.BoolVar(&o.NoReconnectValidation, "no-reconnect-validation", false, "with the session layer, let a server accept a reconnecting session on its own tree's word, without ordering its move (shows what the lock checker catches)")
	f.BoolVar(&o.ExpiryInAnyEpoch, "expiry-in-any-epoch", false, "with the session layer, let a leader's expiry take effect whatever epoch it commits in (shows what the lock checker catches)")
	f.BoolVar(&o.ExpiryDespiteMove, "expiry-despite-move", false, "with the session layer, let a leader's expiry take effect after a move of the session it had not applied when it decided it (shows what the lock checker catches)")
	f.BoolVar(&o.Weak, "weak", false, "make the last register weak: its writes answered once the leader ordered them (early replies), checked against the weak guarantee (in swarm mode the seed draws it one run in three)")
	f.BoolVar(&o.WeakKeepConnection, "weak-keep-connection", false, "with weak registers, keep the connection of a client whose early-answered write was lost: the origin's rule left out, which the weak checker must catch")
	f.BoolVar(&o.LocalReads, "local-reads", false, "answer half of the clients' reads from the server's own tree, not through the log, checked never to show a client a state older than one it has seen (in swarm mode the seed draws it one run in two)")
	f.BoolVar(&o.NoReadWait, "no-read-wait", false, "with local reads, let a server answer before it has applied what the client has seen (shows what the read checker catches)")
	f.Int64Var(&safetyMS, "safety-ms", 0, "virtual length of the safety phase (0: default 4000)")
	f.Int64Var(&livenessMS, "liveness-ms", 0, "virtual length of the liveness phase (0: default 4000)")
	f.StringVar(&history, "history", "", "write the client history as JSON lines to this file")
	f.BoolVar(&jsonOut, "json", false, "print a one-line JSON summary")
	f.BoolVarP(&verbose, "verbose", "v", false, "log every injected fault")
	bench.register(f)
	return cmd
}

func writeHistory(path string, r sim.Result) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.WriteHistory(fh); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
