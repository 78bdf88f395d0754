#!/usr/bin/env bash
# Runs `giraffe bench` against a standalone Giraffe server and a standalone
# Apache ZooKeeper 3.9 (../shared/peers/zookeeper), both with fsync on, one
# after the other in the same run on this machine, and prints a Markdown
# table with the ratio. Both servers are warmed up the same way first.
# Usage: scripts/bench-vs-zookeeper.sh [DURATION] [RUNS]   (defaults 10s, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR="${1:-10s}"
RUNS="${2:-3}"
PEER=../shared/peers/zookeeper
BIN=bin/giraffe
OUT="$(mktemp -d)"
go build -o "$BIN" ./cmd/giraffe
bash "$PEER/setup.sh" > /dev/null

ZK_BASE="$OUT/zk" ZK_PORT_BASE=24180 bash "$PEER/run.sh" 1 > /dev/null
ZK=127.0.0.1:24181
GPORT=24281
"$BIN" server --data-dir "$OUT/giraffe" --client-addr 127.0.0.1 --client-port $GPORT > "$OUT/giraffe.log" 2>&1 &
GPID=$!
trap 'kill $GPID 2>/dev/null || true; ZK_BASE="$OUT/zk" bash "$PEER/stop.sh" > /dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
sleep 1
GF=127.0.0.1:$GPORT

# Warm-up: a fresh JVM runs at a fraction of its speed for its first seconds.
for t in $ZK $GF; do
  "$BIN" bench --servers $t --workload mixed --warmup 0s --duration 20s --quiet > /dev/null
done

run() { # target workload sessions -> JSON lines
  "$BIN" bench --servers "$1" --workload "$2" --sessions "$3" --outstanding 64 --value-size 1024 \
    --warmup 3s --duration "$DUR" --quiet --json
}
: > "$OUT/results.jsonl"
for r in $(seq 1 "$RUNS"); do
  for w in write read mixed; do
    for t in $GF $ZK; do run $t $w 8 | sed "s/^{/{\"target\":\"$t\",/" >> "$OUT/results.jsonl"; done
  done
  for t in $GF $ZK; do run $t create 1 | sed "s/^{/{\"target\":\"$t\",/" >> "$OUT/results.jsonl"; done
done

python3 - "$OUT/results.jsonl" "$GF" "$ZK" "$DUR" "$RUNS" <<'PY'
import json, statistics, sys
path, gf, zk, dur, runs = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
def med(target, workload, key):
    vals = [r["throughput_ops"] if key == "tput" else r["latency_ms"][key]
            for r in rows if r["target"] == target and r["workload"] == workload]
    return statistics.median(vals)
print(f"| workload | Giraffe | ZooKeeper 3.9.4 | Giraffe / ZooKeeper |")
print(f"|---|---|---|---|")
for w, label in [("write", "writes/s (setData 1 KiB, 8 sessions x 64 outstanding)"),
                 ("read", "reads/s (getData 1 KiB, 8 x 64)"),
                 ("mixed", "50% mix/s (8 x 64)")]:
    g, z = med(gf, w, "tput"), med(zk, w, "tput")
    print(f"| {label} | {g:,.0f} | {z:,.0f} | {g/z:.2f}x |")
g, z = med(gf, "create", "mean"), med(zk, "create", "mean")
print(f"| create latency, one worker (ms, mean; ZooKeeper paper §5.2) | {g:.3f} | {z:.3f} | {g/z:.2f}x |")
g, z = med(gf, "create", "tput"), med(zk, "create", "tput")
print(f"| creates/s, one worker | {g:,.0f} | {z:,.0f} | {g/z:.2f}x |")
print()
print(f"Medians of {runs} runs of {dur} each after a 3 s warm-up per run and a 20 s warm-up per server.")
PY
