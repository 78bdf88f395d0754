package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/launcher"
)

func newNSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ns",
		Short: "Look at the namespaces of running servers",
	}
	cmd.AddCommand(newNSStatusCmd())
	return cmd
}

// serverNamespaces is one server's answer in `giraffe ns status --json`.
type serverNamespaces struct {
	Address string `json:"address"`
	Error   string `json:"error,omitempty"`
	adminapi.NamespacesStatus
}

func newNSStatusCmd() *cobra.Command {
	var (
		servers, dir string
		jsonOut      bool
		timeout      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each server's namespaces: level, state, last zxid, znodes and digest",
		Long: `status asks every server's metrics port (GET /namespaces) for its namespaces:
level, state, the last applied zxid that changed the namespace, its znode
count and the digest of its subtree. Servers that report the same last zxid
for a namespace must report the same digest; status says for each namespace
whether they do, and exits with status 1 if two of them differ.`,
		Example: `  giraffe ns status --servers 127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002
  giraffe ns status --dir /tmp/giraffe-run --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addrs, err := metricsAddrs(servers, dir)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			answers := make([]serverNamespaces, len(addrs))
			for i, a := range addrs {
				answers[i].Address = a
				st, err := adminapi.Client{}.Namespaces(ctx, a)
				if err != nil {
					answers[i].Error = err.Error()
					continue
				}
				answers[i].NamespacesStatus = st
			}
			mismatches := digestMismatches(answers)
			out := cmd.OutOrStdout()
			if jsonOut {
				if err := json.NewEncoder(out).Encode(answers); err != nil {
					return err
				}
			} else {
				printNSStatus(out, answers, mismatches)
			}
			if len(mismatches) > 0 {
				return errors.New(strings.Join(mismatches, "; "))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "servers", "", "comma-separated metrics addresses (host:metricsPort) of the servers")
	f.StringVar(&dir, "dir", "", "or: the directory of a `giraffe cluster` (all its servers)")
	f.BoolVar(&jsonOut, "json", false, "print one JSON array, one object per server")
	f.DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the servers")
	return cmd
}

// metricsAddrs returns the metrics addresses given, or those of the
// servers of the cluster in dir.
func metricsAddrs(servers, dir string) ([]string, error) {
	switch {
	case servers != "" && dir != "":
		return nil, errors.New("give --servers or --dir, not both")
	case servers != "":
		return strings.Split(servers, ","), nil
	case dir != "":
		c, err := launcher.Load(dir)
		if err != nil {
			return nil, err
		}
		var addrs []string
		for _, s := range c.Servers {
			addrs = append(addrs, s.MetricsAddr)
		}
		return addrs, nil
	}
	return nil, errors.New("give the servers' metrics addresses (--servers) or a cluster directory (--dir)")
}

// digestMismatches names every namespace for which two servers report
// the same last zxid but different digests.
func digestMismatches(answers []serverNamespaces) []string {
	type key struct {
		root string
		zxid int64
	}
	seen := map[key]string{} // digest, then "server@address"
	first := map[key]string{}
	var out []string
	for _, a := range answers {
		for _, ns := range a.Namespaces {
			k := key{ns.Root, ns.LastZxid}
			d, ok := seen[k]
			switch {
			case !ok:
				seen[k], first[k] = ns.Digest, a.Address
			case d != ns.Digest:
				out = append(out, fmt.Sprintf("namespace %s at zxid %#x: digest %s on %s, %s on %s",
					ns.Root, ns.LastZxid, d, first[k], ns.Digest, a.Address))
			}
		}
	}
	return out
}

// printNSStatus prints one table row per server and namespace, then for
// each namespace whether the servers agree.
func printNSStatus(out io.Writer, answers []serverNamespaces, mismatches []string) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tADDRESS\tAPPLIED\tNAMESPACE\tLEVEL\tSTATE\tLAST ZXID\tZNODES\tDIGEST")
	for _, a := range answers {
		if a.Error != "" {
			fmt.Fprintf(tw, "-\t%s\t-\t-\t-\tunreachable\t-\t-\t%s\n", a.Address, a.Error)
			continue
		}
		for _, ns := range a.Namespaces {
			fmt.Fprintf(tw, "%d\t%s\t%#x\t%s\t%s\t%s\t%#x\t%d\t%s\n", a.ID, a.Address, a.AppliedZxid,
				ns.Root, ns.Level, ns.State, ns.LastZxid, ns.Nodes, ns.Digest)
		}
	}
	tw.Flush()
	if len(mismatches) > 0 {
		for _, m := range mismatches {
			fmt.Fprintln(out, "DIGESTS DIFFER:", m)
		}
		return
	}
	// For each namespace: do all servers report one last zxid (so their
	// equal digests say the namespace is equal everywhere)?
	zxids := map[string]map[int64]bool{}
	var roots []string
	for _, a := range answers {
		for _, ns := range a.Namespaces {
			if zxids[ns.Root] == nil {
				zxids[ns.Root] = map[int64]bool{}
				roots = append(roots, ns.Root)
			}
			zxids[ns.Root][ns.LastZxid] = true
		}
	}
	for _, r := range roots {
		if len(zxids[r]) == 1 {
			fmt.Fprintf(out, "%s: equal on every server that answered\n", r)
		} else {
			fmt.Fprintf(out, "%s: servers at %d different last zxids; equal digests wherever the last zxid is equal\n", r, len(zxids[r]))
		}
	}
}
