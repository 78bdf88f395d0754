#!/usr/bin/env bash
# Giraffe beside Apache ZooKeeper 3.9 (../shared/peers/zookeeper) at each
# size in SIZES (1: standalone; 3: Giraffe classic; more: Giraffe forest
# 3-3), both running at once on this machine with fsync on, measured in
# interleaved rounds (ZooKeeper, Giraffe, ZooKeeper, Giraffe, ...) after the
# same warm-up for both (write, read and create phases of 3N+2 s each).
# Each round runs, on each system: setData and getData of 1 KiB through
# giraffe bench's own client (8 sessions x 64 outstanding), setData through
# go-zookeeper (8 x 64), and the create benchmark (one worker); every run
# reports the servers' own CPU per operation (--pids). When the Giraffe
# servers run with GOMAXPROCS=1 (the launcher's choice for ensembles of at
# least two servers per core), ZooKeeper's JVMs get
# -XX:ActiveProcessorCount=1. Prints Markdown tables of medians over the
# rounds; the raw results are kept in RESULTS (default: a temporary file).
# Usage: scripts/bench-interleaved.sh [SIZES] [ROUNDS] [DURATION]
#        (defaults "1 3 9", 3, 5s)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES="${1:-1 3 9}"
ROUNDS="${2:-3}"
DUR="${3:-5s}"
. scripts/lib-peers.sh
RES="${RESULTS:-$OUT/results.jsonl}"; : > "$RES"

# run SYSTEM N ROUND SERVERS PIDS WARMUP DURATION ARGS...: one bench run.
run() {
  local sys=$1 n=$2 round=$3; shift 3
  bench_run "\"system\":\"$sys\",\"nodes\":$n,\"round\":$round" "$@"
}

for n in $SIZES; do
  zk_opts=""
  if [ "$n" -ge $((2 * $(nproc))) ]; then zk_opts="-XX:ActiveProcessorCount=1"; fi
  # run.sh returns once every server serves (and, N > 1, one leads).
  start_pair "$n" "$zk_opts"
  warm_pair "$n"
  for round in $(seq 1 "$ROUNDS"); do
    for sys in zookeeper giraffe; do
      if [ "$sys" = zookeeper ]; then s=$ZS; p=$ZP; else s=$GS; p=$GP; fi
      for w in write read; do
        run "$sys" "$n" "$round" "$s" "$p" 1s "$DUR" --workload "$w" --sessions 8 --outstanding 64
      done
      run "$sys" "$n" "$round" "$s" "$p" 1s "$DUR" --workload write --sessions 8 --outstanding 64 --client go-zookeeper
      run "$sys" "$n" "$round" "$s" "$p" 1s "$DUR" --workload create --sessions 1
    done
  done
  stop_pair
done

python3 - "$RES" "$ROUNDS" "$DUR" <<'PY'
import json, statistics, sys
path, rounds, dur = sys.argv[1:]
rows = [json.loads(l) for l in open(path) if l.strip()]
rows = [r for r in rows if r["round"] > 0]
sizes = sorted({r["nodes"] for r in rows})
def pick(sys_, n, workload, client):
    return [r for r in rows if r["system"] == sys_ and r["nodes"] == n and r["workload"] == workload and r["client"] == client]
def med(rs, f):
    v = [f(r) for r in rs]
    return statistics.median(v) if v else float("nan")
def shape(n):
    return "standalone" if n == 1 else ("classic" if n == 3 else "forest 3-3")
fs = [r["fsync_probe"]["p50_ms"] for r in rows if not r["fsync_probe"].get("skipped")]
print(f"Medians of {rounds} interleaved rounds of {dur}; fsync on; fsync probe p50 over the runs {min(fs):.2f}-{max(fs):.2f} ms.\n")
for workload, client, label in [("write", "giraffe", "setData 1 KiB, 8 x 64, giraffe bench's client"),
                                ("read", "giraffe", "getData 1 KiB, 8 x 64, giraffe bench's client"),
                                ("write", "go-zookeeper", "setData 1 KiB, 8 x 64, go-zookeeper"),
                                ("create", "giraffe", "create, one worker (ZooKeeper paper §5.2)")]:
    print(f"\n**{label}**\n")
    print("| servers | Giraffe ops/s | ZooKeeper ops/s | ratio | Giraffe p99 / p99.9 ms | ZooKeeper p99 / p99.9 ms | server CPU µs/op Giraffe | ZooKeeper | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        g, z = pick("giraffe", n, workload, client), pick("zookeeper", n, workload, client)
        if not g or not z:
            continue
        gt, zt = med(g, lambda r: r["throughput_ops"]), med(z, lambda r: r["throughput_ops"])
        gc, zc = med(g, lambda r: r["server_cpu"]["per_op_us"]), med(z, lambda r: r["server_cpu"]["per_op_us"])
        lat = lambda rs: f'{med(rs, lambda r: r["latency_ms"]["p99"]):.2f} / {med(rs, lambda r: r["latency_ms"]["p999"]):.2f}'
        print(f"| {n} ({shape(n)}) | {gt:,.0f} | {zt:,.0f} | {gt/zt:.2f}x | {lat(g)} | {lat(z)} | {gc:.1f} | {zc:.1f} | {gc/zc:.2f}x |")
PY
echo
echo "raw results: $RES"
