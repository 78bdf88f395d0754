#!/usr/bin/env bash
# Reads and writes on a big tree while it is snapshotted, Giraffe beside
# Apache ZooKeeper 3.9 (../shared/peers/zookeeper) at each size in SIZES
# (1: standalone; 3: Giraffe classic), both running at once on this machine
# with fsync on and a snapshot every SNAPCOUNT writes. Each system gets a
# tree of ZNODES znodes of 1 KiB (giraffe bench bigtree), then ROUNDS
# interleaved windows (ZooKeeper, Giraffe) of DURATION in which one
# synchronous reader and one synchronous writer work on random znodes while
# background writes at RATE per second make the servers snapshot the tree.
# Prints a Markdown table of the medians (latency percentiles, operations
# over 50 ms, snapshots written, resident memory per znode); the raw
# results are kept in RESULTS (default: a temporary file).
# Usage: scripts/bench-bigtree.sh [SIZES] [ZNODES] [ROUNDS] [DURATION]
#        (defaults "1", 1000000, 3, 20s; RATE 3000, SNAPCOUNT 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES="${1:-1}"
ZNODES="${2:-1000000}"
ROUNDS="${3:-3}"
DUR="${4:-20s}"
RATE="${RATE:-3000}"
SNAPCOUNT="${SNAPCOUNT:-100000}"
. scripts/lib-peers.sh
RES="${RESULTS:-$OUT/results.jsonl}"; : > "$RES"
big_tree_pair "$ZNODES" "$SNAPCOUNT"

for n in $SIZES; do
  CLASSIC=1 start_pair "$n"
  for round in $(seq 0 "$ROUNDS"); do
    for sys in zookeeper giraffe; do
      if [ "$sys" = zookeeper ]; then s=$ZS; p=$ZP; d=$ZKB; else s=$GS; p=$GP; d=$GDIR; fi
      # Round 0 creates the tree (and warms both up); the others time it.
      "$BIN" bench bigtree --servers "$s" --pids "$p" --snap-dir "$d" --znodes "$ZNODES" \
        --rate "$RATE" --duration "$DUR" --json | sed "s/^{/{\"system\":\"$sys\",\"nodes\":$n,\"round\":$round,/" >> "$RES"
    done
  done
  stop_pair
done

python3 - "$RES" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = lambda v: statistics.median(v) if v else 0
print("| servers | system | created/s | resident bytes per znode | read p50 / p99 / p99.9 / max ms | reads over 50 ms | write p50 / p99 / p99.9 / max ms | writes over 50 ms | snapshots per window |")
print("|---|---|---|---|---|---|---|---|---|")
for n in sorted({r["nodes"] for r in rows}):
    for sys_ in ("zookeeper", "giraffe"):
        rs = [r for r in rows if r["nodes"] == n and r["system"] == sys_ and r["round"] > 0]
        first = [r for r in rows if r["nodes"] == n and r["system"] == sys_ and r["round"] == 0]
        if not rs:
            continue
        lat = lambda cls, k: med([r[cls]["latency_ms"][k] for r in rs])
        cell = lambda cls: " / ".join("%.2f" % lat(cls, k) for k in ("p50", "p99", "p999", "max"))
        print("| %d | %s | %.0f | %.0f | %s | %.0f | %s | %.0f | %.0f |" % (
            n, sys_, first[0]["populate_ops_per_sec"] if first else 0,
            med([r["rss_bytes_per_znode"] for r in rs]),
            cell("read"), med([r["read"]["stalls"] for r in rs]),
            cell("write"), med([r["write"]["stalls"] for r in rs]),
            med([r["snapshots"] for r in rs])))
PY
