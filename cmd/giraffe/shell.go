package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/peterh/liner"
	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/cli"
	"github.com/giraffe-coord/giraffe/internal/shell"
)

// newShellCmd returns `giraffe shell`, a zkCli-style shell.
func newShellCmd() *cobra.Command {
	var timeout time.Duration
	var quiet bool
	cmd := &cobra.Command{
		Use:   "shell HOST:PORT[,HOST:PORT...] [COMMAND ARGS...]",
		Short: "An interactive zkCli-style shell (ls, get, set, create, delete, stat, watch, lock, acl, quota, reconfig ...)",
		Long: `shell opens a session on a Giraffe or ZooKeeper ensemble and runs zkCli-style
commands: ls, get, set, create (-e ephemeral, -s sequential, -c container,
-t TTL), delete, deleteall, stat, watch (persistent; events print as they
come), lock/unlock (a queue lock held by the shell's session), getAcl, setAcl,
addauth, sync, connect, close, help, quit; and, with ZooKeeper 3.9 zkCli's
options and output: addWatch, removewatches, whoami, getEphemerals,
getAllChildrenNumber, setquota/listquota/delquota, config and reconfig
(help lists each command's options).

On a terminal it edits lines with history (~/.giraffe_history) and completes
command names and znode paths with Tab. With input from a pipe or file it runs
each line and exits with status 1 if any command failed. Text in single
or double quotes is one word (create /a "two words"). Given a command after
the servers, it runs that one command; everything after the servers is that
command's, options included (ls -R /).

It prints its connection attempts, and a failed one's reason, to stderr, and
gives up when no server answers within --timeout, which also bounds each
command.`,
		Example: `  giraffe shell 127.0.0.1:2181
  giraffe shell 127.0.0.1:2181 ls -R /
  giraffe shell --timeout 5s 127.0.0.1:2181,127.0.0.1:2182 stat /a
  printf 'create /a x\nget /a\n' | giraffe shell 127.0.0.1:2181`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			opts := []client.Option{client.WithSessionTimeout(30e9)}
			if !quiet {
				opts = append(opts, client.WithLogger(connectionLog()))
			}
			connectCtx, cancel := context.WithTimeout(ctx, timeout)
			sh, err := shell.New(connectCtx, args[0], os.Stdout, opts...)
			cancel()
			if err != nil {
				return err
			}
			defer sh.Close()
			sh.SetTimeout(timeout)
			if len(args) > 1 {
				if err := sh.ExecWords(ctx, args[1:]); err != nil && err != io.EOF {
					return cli.ErrSilent
				}
				return nil
			}
			if st, err := os.Stdin.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 || !liner.TerminalSupported() {
				if sh.Run(context.Background(), os.Stdin, "") {
					return cli.ErrSilent
				}
				return nil
			}
			stop() // Ctrl-C cancels the line, not the shell
			return interactive(sh, args[0])
		},
	}
	// Options end at the servers: the rest is the one-shot command's.
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait to connect, and for each command")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print connection attempts")
	return cmd
}

// connectionLog prints the client's connection events (attempts that
// failed, connected, disconnected) to stderr, one short line each.
func connectionLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// interactive runs the shell on a terminal with line editing, history and
// completion.
func interactive(sh *shell.Shell, servers string) error {
	ln := liner.NewLiner()
	defer ln.Close()
	ln.SetCtrlCAborts(true)
	ln.SetCompleter(func(line string) []string { return sh.Complete(context.Background(), line) })
	home, _ := os.UserHomeDir()
	history := filepath.Join(home, ".giraffe_history")
	if f, err := os.Open(history); err == nil {
		ln.ReadHistory(f)
		f.Close()
	}
	defer func() {
		if f, err := os.Create(history); err == nil {
			ln.WriteHistory(f)
			f.Close()
		}
	}()
	fmt.Printf("Connected to %s. Type help for the commands.\n", servers)
	for {
		line, err := ln.Prompt(fmt.Sprintf("[giraffe: %s] ", servers))
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			continue
		case err != nil: // io.EOF (Ctrl-D)
			fmt.Println()
			return nil
		}
		if strings.TrimSpace(line) != "" {
			ln.AppendHistory(line)
		}
		if err := sh.Exec(context.Background(), line); err == io.EOF {
			return nil
		}
	}
}
