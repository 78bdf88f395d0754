#!/usr/bin/env bash
# Giraffe ensembles (classic mode and forest 3-3) beside Apache ZooKeeper 3.9
# ensembles (../shared/peers/zookeeper) of the same sizes, all with fsync on,
# one after the other in one run on this machine: write, read and 50% mixed
# throughput (1 KiB values, sessions spread over every server), the ZooKeeper
# paper's create benchmark (one worker), and the longest write gap after a
# SIGKILL of the leader (TRIALS trials each) and, for the forest, of a
# coordinator that is not the leader. Prints Markdown tables.
# Usage: scripts/bench-ensemble-vs-zookeeper.sh [DURATION] [TRIALS] [SIZES]
#        (defaults 8s, 5, "3 5 7 9")
set -euo pipefail
cd "$(dirname "$0")/.."
DUR="${1:-8s}"
TRIALS="${2:-5}"
SIZES="${3:-3 5 7 9}"
. scripts/lib-peers.sh
RES="$OUT/results.jsonl"; : > "$RES"

tag() { sed "s/^{/{\"system\":\"$1\",\"nodes\":$2,/"; }

bench_all() { # system nodes servers
  for w in write read mixed; do
    "$BIN" bench --servers "$3" --workload $w --sessions 8 --outstanding 64 --value-size 1024 \
      --warmup 3s --duration "$DUR" --quiet --json | tag "$1" "$2" >> "$RES"
  done
  "$BIN" bench --servers "$3" --workload create --sessions 1 --warmup 2s --duration "$DUR" --quiet --json \
    | tag "$1" "$2" >> "$RES"
}

giraffe_leader() { "$BIN" cluster status --dir "$GDIR" --json | python3 -c \
  "import json,sys; print([s['id'] for s in json.load(sys.stdin) if s['role']=='leader' and s['alive']][0])"; }
giraffe_coordinator() { "$BIN" cluster status --dir "$GDIR" --json | python3 -c \
  "import json,sys; print([s['id'] for s in json.load(sys.stdin) if s['role']=='coordinator' and s['alive']][0])"; }

for n in $SIZES; do
  # ZooKeeper.
  for trial in $(seq 0 "$TRIALS"); do
    ZK_BASE="$ZKB" ZK_PORT_BASE=24180 bash "$PEER/run.sh" "$n" > /dev/null
    wait_zk
    ZS=$(cat "$ZKB/servers")
    if [ "$trial" = 0 ]; then
      "$BIN" bench --servers "$ZS" --workload mixed --warmup 0s --duration 15s --quiet > /dev/null  # JVM warm-up
      bench_all zookeeper "$n" "$ZS"
    else
      "$BIN" bench gap --servers "$ZS" --kill-cmd "kill -9 $(zk_leader_pid)" --json | tag zookeeper "$n" >> "$RES"
    fi
    ZK_BASE="$ZKB" bash "$PEER/stop.sh" > /dev/null 2>&1 || true
  done
  # Giraffe, classic and forest 3-3.
  for shape in classic forest; do
    args=(--nodes "$n" --trees 3 --children 3)
    [ "$shape" = classic ] && args=(--nodes "$n" --classic)
    for trial in $(seq 0 "$TRIALS"); do
      rm -rf "$GDIR"
      "$BIN" cluster start "${args[@]}" --dir "$GDIR" --base-port 25180 > /dev/null
      GS=$(python3 -c "print(','.join('127.0.0.1:%d' % (25180 + i) for i in range($n)))")
      if [ "$trial" = 0 ]; then
        bench_all "giraffe-$shape" "$n" "$GS"
      else
        "$BIN" bench gap --servers "$GS" --kill-cmd "$BIN cluster kill $(giraffe_leader) --dir $GDIR" --json \
          | tag "giraffe-$shape" "$n" >> "$RES"
      fi
      "$BIN" cluster stop --dir "$GDIR" > /dev/null
    done
  done
  # Forest 3-3: a coordinator that is not the leader.
  for trial in $(seq 1 "$TRIALS"); do
    rm -rf "$GDIR"
    "$BIN" cluster start --nodes "$n" --trees 3 --children 3 --dir "$GDIR" --base-port 25180 > /dev/null
    GS=$(python3 -c "print(','.join('127.0.0.1:%d' % (25180 + i) for i in range($n)))")
    "$BIN" bench gap --servers "$GS" --kill-cmd "$BIN cluster kill $(giraffe_coordinator) --dir $GDIR" --json \
      | tag "giraffe-forest-gc" "$n" >> "$RES"
    "$BIN" cluster stop --dir "$GDIR" > /dev/null
  done
done

python3 - "$RES" "$DUR" "$TRIALS" <<'PY'
import json, statistics, sys
path, dur, trials = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
sizes = sorted({r["nodes"] for r in rows})
systems = ["zookeeper", "giraffe-classic", "giraffe-forest"]
def get(system, n, workload, key="throughput_ops"):
    for r in rows:
        if r["system"] == system and r["nodes"] == n and r.get("workload") == workload:
            return r[key] if key != "mean" else r["latency_ms"]["mean"]
    return float("nan")
def gaps(system, n):
    return sorted(r["max_gap_ms"] for r in rows if r["system"] == system and r["nodes"] == n and "max_gap_ms" in r)
print(f"Duration {dur} per run; sessions spread over all servers; fsync on everywhere.\n")
for w, label in [("write", "writes/s (setData 1 KiB, 8 sessions x 64 outstanding)"),
                 ("read", "reads/s (getData 1 KiB, 8 x 64)"), ("mixed", "50% mix/s (8 x 64)")]:
    print(f"\n**{label}**\n")
    print("| servers | ZooKeeper 3.9.4 | Giraffe classic | Giraffe forest 3-3 | classic / ZK | forest / ZK |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        z, c, f = (get(s, n, w) for s in systems)
        print(f"| {n} | {z:,.0f} | {c:,.0f} | {f:,.0f} | {c/z:.2f}x | {f/z:.2f}x |")
print("\n**create latency, one worker (ms, mean; ZooKeeper paper §5.2)**\n")
print("| servers | ZooKeeper 3.9.4 | Giraffe classic | Giraffe forest 3-3 |")
print("|---|---|---|---|")
for n in sizes:
    z, c, f = (get(s, n, "create", "mean") for s in systems)
    print(f"| {n} | {z:.3f} | {c:.3f} | {f:.3f} |")
print(f"\n**longest write gap after SIGKILL of the leader (ms; {trials} trials: median / max)**\n")
print("| servers | ZooKeeper 3.9.4 | Giraffe classic | Giraffe forest 3-3 |")
print("|---|---|---|---|")
for n in sizes:
    cells = []
    for s in systems:
        g = gaps(s, n)
        cells.append(f"{statistics.median(g):.0f} / {max(g):.0f}" if g else "-")
    print(f"| {n} | " + " | ".join(cells) + " |")
print(f"\n**longest write gap after SIGKILL of a coordinator that is not the leader, forest 3-3 (ms; {trials} trials)**\n")
print("| servers | median | max | every trial |")
print("|---|---|---|---|")
for n in sizes:
    g = gaps("giraffe-forest-gc", n)
    if g:
        print(f"| {n} | {statistics.median(g):.0f} | {max(g):.0f} | " + ", ".join(f"{x:.0f}" for x in g) + " |")
print("\n**longest write gap after SIGKILL of the leader, every trial (ms)**\n")
print("| servers | ZooKeeper 3.9.4 | Giraffe classic | Giraffe forest 3-3 |")
print("|---|---|---|---|")
for n in sizes:
    print(f"| {n} | " + " | ".join(", ".join(f"{x:.0f}" for x in gaps(s, n)) or "-" for s in systems) + " |")
PY
