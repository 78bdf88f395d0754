package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/bench"
)

// newBenchSessionsCmd returns `giraffe bench sessions`: many sessions and
// watches, what keeping them costs the servers and what losing them does
// to writes.
func newBenchSessionsCmd() *cobra.Command {
	cfg := bench.SessionsConfig{}
	var (
		servers, phases string
		jsonOut, worker bool
	)
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "Many sessions and watches: idle cost, mass expiry, watch notification latency",
		Long: `sessions runs up to three phases against the servers (--phases):

  idle    --sessions sessions, spread over the servers in turn, each pinging
          when it has sent nothing for a third of its negotiated timeout
          (--timeout), as ZooKeeper's clients do. Once all are open and
          --settle has passed, it measures over --hold each server's CPU
          (--pids, from /proc, in percent of one core), the bytes per second
          it writes to its log (--metrics: the growth of
          giraffe_log_bytes_written_total; --data-dirs: the growth of the
          log.* files under each data directory, up to their last non-zero
          byte, which is what works for ZooKeeper, whose log files are
          preallocated), and its open connections (mntr).
  expire  --expire-sessions sessions create --ephemerals ephemeral znodes
          each under one parent; an open-loop writer (--rate setData of
          --value-size bytes per second, Poisson arrivals, on
          --writer-sessions other sessions) starts, and --writer-lead later
          every connection is dropped without closing its session. The
          writer's latency is reported for the requests due from the drop
          until the parent has no child left, with how long that took.
  watch   --watchers sessions set a data watch on one znode; another session
          (on the first server that takes it) sets its data --rounds times,
          and each watcher sets its watch again as soon as it is notified. Each
          notification is timed from the setData's reply at the writer to its
          arrival at the watcher (0 when it came first), and from the
          setData's sending; missed ones are counted.

Refusals and lost connections are what loaded servers do, and the phases go
on through them as ZooKeeper's clients do. A session whose handshake is
refused (the connection closed unanswered, as a server that is not serving
does) tries the next server of the list after a pause that doubles from
50 ms up to 2 s, drawn at random in its upper half, for up to --open-timeout;
the output counts the handshakes retried, and only a session that no server
took by then fails the phase. A writer session whose connection is lost
reconnects with its session (its id, password and last zxid seen) on the
next server, or opens a new one if the servers expired it; the requests
lost with the connection count as errors, the reconnects are counted, and
the requests due meanwhile leave at once, timed from when they were due.
The coordinator's own session does the same and asks its reads again,
except for a watch round's setData, whose loss fails the phase (its reply is
what the round's notifications are timed from). A held session whose
connection is lost is counted as lost and left out: the idle phase counts
it, the expire phase lets its ephemerals expire with the others, the watch
phase expects no more notifications of it.

Servers, --pids, --metrics and --data-dirs are comma-separated lists in the
same order. A phase's sessions are capped at --max-per-server times the
servers (a server process holds at most about that many under an open-file
limit of 20,000; the output says when the cap applied). Sessions connect
from 127.0.0.2, 127.0.0.3, ... (--source, a new address every --per-source
sessions) when every server is on loopback, so that no source address runs
out of ephemeral ports; the servers' per-address limit (maxClientCnxns) must
be 0. Past --per-process sessions, a phase holds them in worker processes
(this binary run with --worker), --per-process each.`,
		Example: `  giraffe bench sessions --servers 127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183 \
      --pids 101,102,103 --metrics 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 --json
  giraffe bench sessions --phases watch --watchers 10000 --rounds 10 --servers 127.0.0.1:2181`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if worker {
				return bench.ServeSessionsWorker(os.Stdin, os.Stdout)
			}
			cfg.Servers = strings.Split(servers, ",")
			cfg.Phases = strings.Split(phases, ",")
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.Worker = func() *exec.Cmd { return exec.Command(exe, "bench", "sessions", "--worker") }
			cfg.Progress = func(line string) { fmt.Fprintln(os.Stderr, line) }
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			res, err := bench.RunSessions(ctx, cfg)
			if err != nil {
				return err
			}
			if jsonOut {
				return json.NewEncoder(os.Stdout).Encode(res)
			}
			printSessions(res)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "servers", "127.0.0.1:2181", "comma-separated host:port list; sessions are spread over it")
	f.StringVar(&phases, "phases", "idle,expire,watch", "comma-separated phases to run, in order: idle, expire, watch")
	f.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "session timeout every session asks for")
	f.StringVar(&cfg.Root, "root", "/giraffe-sessions", "znode under which the benchmark works")
	f.IntVar(&cfg.Sessions, "sessions", 100000, "idle: sessions")
	f.DurationVar(&cfg.Settle, "settle", 5*time.Second, "idle: wait after the last session opened, before measuring")
	f.DurationVar(&cfg.Hold, "hold", 30*time.Second, "idle: measured window")
	f.IntSliceVar(&cfg.PIDs, "pids", nil, "idle: server process ids, in the order of --servers (CPU from /proc)")
	f.StringSliceVar(&cfg.MetricsURLs, "metrics", nil, "idle: servers' metrics addresses (host:port or URL), in the order of --servers")
	f.StringSliceVar(&cfg.DataDirs, "data-dirs", nil, "idle: servers' data directories, in the order of --servers (growth of their log.* files)")
	f.IntVar(&cfg.ExpireSessions, "expire-sessions", 10000, "expire: sessions holding ephemerals")
	f.IntVar(&cfg.Ephemerals, "ephemerals", 10, "expire: ephemeral znodes per session")
	f.Float64Var(&cfg.Rate, "rate", 5000, "expire: writer's setData per second (open loop)")
	f.IntVar(&cfg.ValueSize, "value-size", 1024, "expire: bytes per write")
	f.IntVar(&cfg.WriterSessions, "writer-sessions", 8, "expire: writer's sessions")
	f.DurationVar(&cfg.WriterLead, "writer-lead", 2*time.Second, "expire: writing time before the drop")
	f.IntVar(&cfg.Watchers, "watchers", 10000, "watch: watching sessions")
	f.IntVar(&cfg.Rounds, "rounds", 10, "watch: changes of the watched znode")
	f.DurationVar(&cfg.RoundTimeout, "round-timeout", 10*time.Second, "watch: wait for a round's notifications")
	f.StringVar(&cfg.Source, "source", "auto", "first local address to connect from (auto: 127.0.0.2 when every server is on loopback; empty: any)")
	f.IntVar(&cfg.PerSource, "per-source", 10000, "sessions per local source address")
	f.IntVar(&cfg.PerProcess, "per-process", 15000, "most sessions held by one process; more go to worker processes")
	f.IntVar(&cfg.MaxPerServer, "max-per-server", 19000, "cap on each phase's sessions per server")
	f.IntVar(&cfg.Concurrency, "concurrency", 64, "sessions opening (and requests in flight) at once per process")
	f.DurationVar(&cfg.OpenTimeout, "open-timeout", bench.DefaultOpenTimeout,
		"how long a session may take to open (the coordinator's, to come back too), its refused handshakes tried again on the next servers")
	f.BoolVar(&jsonOut, "json", false, "print the result as one JSON object")
	f.BoolVar(&worker, "worker", false, "run as a worker process of another bench sessions (operations on stdin, answers on stdout)")
	f.MarkHidden("worker")
	return cmd
}

// printSessions prints a sessions result for people.
func printSessions(res *bench.SessionsResult) {
	opened := func(c bench.Connected) {
		if c.CapNote != "" {
			fmt.Printf("  %d sessions requested, %s\n", c.Requested, c.CapNote)
		}
		fmt.Printf("  %d sessions opened in %.1fs (%d processes, %d handshakes retried), timeout %d ms\n",
			c.Sessions, c.Seconds, c.Processes, c.Retries, c.TimeoutMs)
	}
	if r := res.Idle; r != nil {
		fmt.Println("idle:")
		opened(r.Connected)
		fmt.Printf("  %.1fs measured after %.1fs: %d pings sent, %d answered (one per %.0f ms idle); %d alive, %d lost %s\n",
			r.HoldSeconds, r.SettleSeconds, r.Pings, r.Pongs, r.PingIntervalMs, r.Alive, r.Lost, r.LostError)
		for _, s := range r.PerServer {
			line := fmt.Sprintf("  %-21s %6d connections", s.Addr, s.Connections)
			if s.CPUPercent != nil {
				line += fmt.Sprintf("  CPU %5.1f%% of a core", *s.CPUPercent)
			}
			if s.LogBytesPerSec != nil {
				line += fmt.Sprintf("  log %9.0f B/s (metric)", *s.LogBytesPerSec)
			}
			if s.LogFileBytesPerSec != nil {
				line += fmt.Sprintf("  log files %9.0f B/s", *s.LogFileBytesPerSec)
			}
			fmt.Println(line)
		}
		fmt.Printf("  the benchmark's own processes: CPU %.1f%% of a core\n", r.ClientCPUPercent)
	}
	if r := res.Expire; r != nil {
		fmt.Println("expire:")
		opened(r.Connected)
		if r.Lost > 0 {
			fmt.Printf("  %d sessions lost before the drop (%s); %d ephemerals left at the drop\n", r.Lost, r.LostError, r.AtDrop)
		}
		fmt.Printf("  %d ephemerals under %s; connections dropped in %.2fs; first ephemeral gone %.2fs after, the last %.2fs after\n",
			r.Created, r.Parent, r.DropSeconds, r.FirstGoneSeconds, r.ExpirySeconds)
		if w := r.Writer; w != nil {
			l := w.Latency
			fmt.Printf("  writer at %.0f/s offered: %d writes due in the window, %d errors (lost connections' among them), %d reconnects; ms p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
				w.OfferedOps, w.Ops, w.Errors, w.Reconnects, l.P50, l.P99, l.P999, l.Max)
		}
		if r.CoordinatorReconnects > 0 {
			fmt.Printf("  the coordinator's session reconnected %d times\n", r.CoordinatorReconnects)
		}
	}
	if r := res.Watch; r != nil {
		fmt.Println("watch:")
		opened(r.Connected)
		l := r.Latency
		fmt.Printf("  %d rounds: %d of %d notifications, %d missed, %d unexpected %s\n",
			r.Rounds, r.Notified, r.Expected, r.Missed, r.Unexpected, r.UnexpectedText)
		if r.Lost > 0 || r.CoordinatorReconnects > 0 {
			fmt.Printf("  %d watchers lost (%s), no longer expected; the coordinator's session reconnected %d times\n",
				r.Lost, r.LostError, r.CoordinatorReconnects)
		}
		fmt.Printf("  ms from the setData's reply: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f (%d notifications came before the reply)\n",
			l.P50, l.P99, l.P999, l.Max, r.BeforeReply)
		s := r.FromSend
		fmt.Printf("  ms from the setData's sending: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", s.P50, s.P99, s.P999, s.Max)
		fmt.Printf("  last notification of each round, ms: %s\n", formatMs(r.RoundLastMs))
		fmt.Printf("  setData of each round, ms: %s\n", formatMs(r.WriteMs))
	}
}

// formatMs prints milliseconds to two places.
func formatMs(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
}
