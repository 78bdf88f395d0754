#!/usr/bin/env bash
# The ZooKeeper paper's Table 2 (§5.2, "create requests processed per
# second"): W workers, each creating a 1 KiB node synchronously and deleting
# it asynchronously, for W = 1, 10, 20, on ensembles of 3, 5, 7 and 9
# servers: Apache ZooKeeper 3.9 (../shared/peers/zookeeper), Giraffe in
# classic mode and Giraffe forest 3-3, one after the other in one run on this
# machine, all with fsync on. Prints a Markdown table.
# Usage: scripts/bench-create-table.sh [DURATION] [SIZES] [WORKERS]
#        (defaults 8s, "3 5 7 9", "1 10 20")
set -euo pipefail
cd "$(dirname "$0")/.."
DUR="${1:-8s}"
SIZES="${2:-3 5 7 9}"
WORKERS="${3:-1 10 20}"
. scripts/lib-peers.sh
RES="$OUT/results.jsonl"; : > "$RES"

tag() { sed "s/^{/{\"system\":\"$1\",\"nodes\":$2,\"workers\":$3,/"; }

creates() { # system nodes servers
  for w in $WORKERS; do
    "$BIN" bench --servers "$3" --workload create --sessions "$w" --value-size 1024 \
      --warmup 2s --duration "$DUR" --quiet --json | tag "$1" "$2" "$w" >> "$RES"
  done
}

for n in $SIZES; do
  ZK_BASE="$ZKB" ZK_PORT_BASE=24180 bash "$PEER/run.sh" "$n" > /dev/null
  wait_zk
  ZS=$(cat "$ZKB/servers")
  "$BIN" bench --servers "$ZS" --workload create --sessions 10 --warmup 0s --duration 10s --quiet > /dev/null  # JVM warm-up
  creates zookeeper "$n" "$ZS"
  ZK_BASE="$ZKB" bash "$PEER/stop.sh" > /dev/null 2>&1 || true
  for shape in classic forest; do
    args=(--nodes "$n" --trees 3 --children 3)
    [ "$shape" = classic ] && args=(--nodes "$n" --classic)
    rm -rf "$GDIR"
    "$BIN" cluster start "${args[@]}" --dir "$GDIR" --base-port 25180 > /dev/null
    GS=$(python3 -c "print(','.join('127.0.0.1:%d' % (25180 + i) for i in range($n)))")
    creates "giraffe-$shape" "$n" "$GS"
    "$BIN" cluster stop --dir "$GDIR" > /dev/null
  done
done

python3 - "$RES" "$DUR" <<'PY'
import json, sys
path, dur = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
sizes = sorted({r["nodes"] for r in rows})
workers = sorted({r["workers"] for r in rows})
systems = [("zookeeper", "ZooKeeper 3.9.4"), ("giraffe-classic", "Giraffe classic"), ("giraffe-forest", "Giraffe forest 3-3")]
def get(system, n, w):
    for r in rows:
        if r["system"] == system and r["nodes"] == n and r["workers"] == w:
            return r["throughput_ops"]
    return float("nan")
print(f"Create requests processed per second (1 KiB, {dur} per run, fsync on; the paper's ZooKeeper of 2010: 776 to 2,740).\n")
print("| workers | system | " + " | ".join(f"{n} servers" for n in sizes) + " |")
print("|---|---|" + "---|" * len(sizes))
for w in workers:
    for s, label in systems:
        print(f"| {w} | {label} | " + " | ".join(f"{get(s, n, w):,.0f}" for n in sizes) + " |")
print("\n**Giraffe / ZooKeeper**\n")
print("| workers | system | " + " | ".join(f"{n} servers" for n in sizes) + " |")
print("|---|---|" + "---|" * len(sizes))
for w in workers:
    for s, label in systems[1:]:
        print(f"| {w} | {label} | " + " | ".join(f"{get(s, n, w) / get('zookeeper', n, w):.2f}x" for n in sizes) + " |")
PY
