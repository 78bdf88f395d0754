#!/usr/bin/env bash
# Hierarchical Chubby's Table 1 (docs/hierarchical-locks.md): tests 1-4 of
# `giraffe bench hc` (3 clients x 100 locks), RUNS runs each, with every
# ensemble under a CPU quota of QUOTA CPUs and without quotas, the tests
# interleaved so that a change in what else runs on the machine falls on
# all of them. Appends one JSON line per run to OUT.jsonl, then prints the
# Markdown tables and draws OUT.svg (giraffe-lab hctable).
# The quotas need a writable cgroup (root): see internal/cpuquota.
# Usage: scripts/bench-hc-table.sh [DURATION] [RUNS] [QUOTA] [OUT]
#        (defaults 50s, 5, 0.25, docs/hc/table1)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-50s}"
RUNS="${2:-5}"
QUOTA="${3:-0.25}"
OUT="${4:-docs/hc/table1}"
BIN="${GIRAFFE_BIN:-bin/giraffe}"
LAB="${GIRAFFE_LAB:-bin/giraffe-lab}"
mkdir -p "$(dirname "$OUT")"
: > "$OUT.jsonl"
for run in $(seq "$RUNS"); do
	for quota in "$QUOTA" 0; do
		for test in 1 2 3 4; do
			echo "run $run, quota $quota, test $test" >&2
			"$BIN" bench hc --test "$test" --clients 3 --locks 100 --duration "$DURATION" \
				--cpu-per-ensemble "$quota" --json --quiet >> "$OUT.jsonl"
		done
	done
done
"$LAB" hctable --svg "$OUT.svg" "$OUT.jsonl"
