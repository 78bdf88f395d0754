#!/usr/bin/env bash
# Swarm-mode simulator runs only: seeds BASE..BASE+N-1, each on classic-3,
# 9-3-3, 27-3-3 and 50-5-10 (`giraffe-lab sim --swarm`: the seed picks the
# faults, configuration changes included). Prints every failure with its
# replay command and a final count; exits 1 if any run failed. FLAGS go to
# every run (for example --disk-faults).
# Usage: scripts/sim-swarm.sh BASE N [FLAGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
BASE="${1:?BASE}"; N="${2:?N}"; shift 2
BIN="$PWD/bin/giraffe-lab"
go build -o "$BIN" ./cmd/giraffe-lab
runs=0; fail=0
for s in $(seq "$BASE" $((BASE + N - 1))); do
  for topo in "--nodes 3 --classic" "--nodes 9 --trees 3 --children 3" "--nodes 27 --trees 3 --children 3" "--nodes 50 --trees 5 --children 10"; do
    runs=$((runs + 1))
    # shellcheck disable=SC2086
    if ! out=$("$BIN" sim --seed "$s" $topo --swarm "$@" 2>&1); then
      fail=$((fail + 1))
      echo "FAIL: giraffe-lab sim --seed $s $topo --swarm $*: $(echo "$out" | grep '^giraffe-lab:' | tail -1)"
    fi
  done
done
echo "runs=$runs failures=$fail"
[ "$fail" = 0 ]
