package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/sim"
	"github.com/giraffe-coord/giraffe/sim/calibrate"
)

func newCostModelCmd() *cobra.Command {
	var (
		runsFile string
		fitOn    []string
		seed     int64
		jsonOut  bool
	)
	cmd := &cobra.Command{
		Use:   "costmodel --runs FILE",
		Short: "Fit the simulator's CPU cost model to real servers and check its predictions per role",
		Long: `costmodel reads what real servers did (scripts/bench-roles.sh: per server
and run, its role, CPU time, fsyncs, entries, client writes and peer
messages), fits the cost model's CPU terms to it by least squares (with
--fit-on, to the runs of those shapes only), then runs the simulator's
open-loop benchmark at each measured shape and rate with the fitted model
and prints, per role, the real and the simulated CPU time per write.`,
		Example: `  scripts/bench-roles.sh > roles.jsonl
  giraffe-lab costmodel --runs roles.jsonl
  giraffe-lab costmodel --runs roles.jsonl --fit-on classic-3,classic-9,forest-9-3-3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := os.Open(runsFile)
			if err != nil {
				return err
			}
			defer f.Close()
			runs, err := calibrate.ReadRoleRuns(f)
			if err != nil {
				return fmt.Errorf("%s: %w", runsFile, err)
			}
			fitRuns := runs
			if len(fitOn) > 0 {
				fitRuns = nil
				for _, r := range runs {
					if slices.Contains(fitOn, r.Shape) {
						fitRuns = append(fitRuns, r)
					}
				}
			}
			cost, err := calibrate.FitRoles(fitRuns, sim.CalibratedCost)
			if err != nil {
				return err
			}
			checks, err := calibrate.ValidateRoles(runs, cost, seed)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if jsonOut {
				return json.NewEncoder(out).Encode(struct {
					Cost   sim.Cost              `json:"cost"`
					Checks []calibrate.RoleCheck `json:"checks"`
				}{cost, checks})
			}
			fmt.Fprintf(out, "cost model (µs): idle %.0f per second, fsync %.1f, entry %.2f, client write %.1f, peer message sent %.2f, received %.2f, peer byte %.5f\n\n",
				cost.IdleCPUUSPerSec, cost.FsyncCPUUS, cost.CPUPerEntryUS, cost.CPUPerClientWriteUS, cost.CPUPerMsgUS, cost.CPUPerRecvMsgUS, cost.CPUPerByteUS)
			fmt.Fprintln(out, "| shape | writes/s | role | servers | fsync ms | real CPU µs/write | simulated | error | fsyncs/write real / sim | messages/write real / sim | fitted on |")
			fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|")
			for _, c := range checks {
				fitted := "yes"
				if len(fitOn) > 0 && !slices.Contains(fitOn, c.Shape) {
					fitted = "no"
				}
				fmt.Fprintf(out, "| %s | %.0f | %s | %d | %.2f | %.1f | %.1f | %+.1f%% | %.2f / %.2f | %.2f / %.2f | %s |\n",
					c.Shape, c.Rate, c.Role, c.Servers, float64(c.FsyncUS)/1000, c.RealCPUUS, c.SimCPUUS, 100*c.Error,
					c.RealFsyncs, c.SimFsyncs, c.RealMsgs, c.SimMsgs, fitted)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&runsFile, "runs", "", "scripts/bench-roles.sh's output (one JSON object per server and run)")
	f.StringSliceVar(&fitOn, "fit-on", nil, "fit to these shapes' runs only (comma-separated, e.g. classic-3,forest-9-3-3); the others are then predictions")
	f.Int64Var(&seed, "seed", 1, "the simulations' seed")
	f.BoolVar(&jsonOut, "json", false, "print the fitted cost and the checks as one JSON object")
	cmd.MarkFlagRequired("runs")
	return cmd
}
