#!/usr/bin/env bash
# Open-loop latency curves of Giraffe beside Apache ZooKeeper 3.9
# (../shared/peers/zookeeper) at each size in SIZES (1: standalone; 3:
# Giraffe classic), both running at once on this machine with fsync on and
# the same warm-up (write, read and create phases of 3N+2 s each). First
# ZooKeeper's saturation rate is measured (setData 1 KiB, closed loop, 8
# sessions x 64 outstanding, median of ROUNDS interleaved runs of DURATION
# each beside Giraffe's); then both systems take the same Poisson arrivals
# (giraffe bench --rate, 8 sessions, no coordinated omission) at each
# fraction in FRACTIONS of that rate, interleaved (ZooKeeper, Giraffe) and
# ROUNDS times, and report the median p50, p99, p99.9 and max latency and
# the servers' CPU per operation at each rate. CLIENT picks the load
# generator's client library (giraffe, go-zookeeper). Prints Markdown
# tables; the raw results are kept in RESULTS (default: a temporary file).
# Usage: scripts/bench-open-loop.sh [SIZES] [ROUNDS] [DURATION]
#        (defaults "1 3", 3, 5s; FRACTIONS "0.1 0.25 0.5 0.8 0.95")
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES="${1:-1 3}"
ROUNDS="${2:-3}"
DUR="${3:-5s}"
FRACTIONS="${FRACTIONS:-0.1 0.25 0.5 0.8 0.95}"
CLIENT="${CLIENT:-giraffe}"
. scripts/lib-peers.sh
RES="${RESULTS:-$OUT/results.jsonl}"; : > "$RES"

# run SYSTEM N ROUND FRACTION SERVERS PIDS WARMUP DURATION ARGS...: one bench run.
run() {
  local sys=$1 n=$2 round=$3 frac=$4; shift 4
  bench_run "\"system\":\"$sys\",\"nodes\":$n,\"round\":$round,\"fraction\":$frac" "$@" --client "$CLIENT"
}

for n in $SIZES; do
  CLASSIC=1 start_pair "$n"
  warm_pair "$n"
  # Saturation: closed loop, interleaved.
  for round in $(seq 1 "$ROUNDS"); do
    for sys in zookeeper giraffe; do
      if [ "$sys" = zookeeper ]; then s=$ZS; p=$ZP; else s=$GS; p=$GP; fi
      run "$sys" "$n" "$round" 0 "$s" "$p" 1s "$DUR" --workload write --sessions 8 --outstanding 64
    done
  done
  sat=$(python3 - "$RES" "$n" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
v = [r["throughput_ops"] for r in rows if r["system"] == "zookeeper" and r["nodes"] == int(sys.argv[2]) and r["round"] > 0 and r["fraction"] == 0]
print(int(statistics.median(v)))
PY
)
  for frac in $FRACTIONS; do
    rate=$(python3 -c "print(max(1, int($sat * $frac)))")
    for round in $(seq 1 "$ROUNDS"); do
      for sys in zookeeper giraffe; do
        if [ "$sys" = zookeeper ]; then s=$ZS; p=$ZP; else s=$GS; p=$GP; fi
        run "$sys" "$n" "$round" "$frac" "$s" "$p" 1s "$DUR" --workload write --sessions 8 --rate "$rate"
      done
    done
  done
  stop_pair
done

python3 - "$RES" "$ROUNDS" "$DUR" "$CLIENT" <<'PY'
import json, statistics, sys
path, rounds, dur, client = sys.argv[1:]
rows = [json.loads(l) for l in open(path) if l.strip()]
rows = [r for r in rows if r["round"] > 0]
def med(rs, f):
    v = [f(r) for r in rs]
    return statistics.median(v) if v else float("nan")
fs = [r["fsync_probe"]["p50_ms"] for r in rows if not r["fsync_probe"].get("skipped")]
print(f"Medians of {rounds} interleaved rounds of {dur}; client {client}; fsync on; fsync probe p50 over the runs {min(fs):.2f}-{max(fs):.2f} ms.")
for n in sorted({r["nodes"] for r in rows}):
    sat = [r for r in rows if r["nodes"] == n and r["fraction"] == 0]
    zs, gs = med([r for r in sat if r["system"] == "zookeeper"], lambda r: r["throughput_ops"]), med([r for r in sat if r["system"] == "giraffe"], lambda r: r["throughput_ops"])
    shape = "standalone" if n == 1 else f"{n} servers, classic"
    print(f"\n**{shape}: closed-loop saturation ZooKeeper {zs:,.0f} ops/s, Giraffe {gs:,.0f} ops/s; open loop at fractions of ZooKeeper's**\n")
    print("| rate (ops/s) | of ZK's saturation | Giraffe p50 / p99 / p99.9 / max ms | ZooKeeper p50 / p99 / p99.9 / max ms | p99 ratio | server CPU µs/op Giraffe | ZooKeeper | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for frac in sorted({r["fraction"] for r in rows if r["nodes"] == n and r["fraction"] > 0}):
        g = [r for r in rows if r["nodes"] == n and r["fraction"] == frac and r["system"] == "giraffe"]
        z = [r for r in rows if r["nodes"] == n and r["fraction"] == frac and r["system"] == "zookeeper"]
        lat = lambda rs: " / ".join(f'{med(rs, lambda r, k=k: r["latency_ms"][k]):.2f}' for k in ("p50", "p99", "p999", "max"))
        gp, zp = med(g, lambda r: r["latency_ms"]["p99"]), med(z, lambda r: r["latency_ms"]["p99"])
        gc, zc = med(g, lambda r: r["server_cpu"]["per_op_us"]), med(z, lambda r: r["server_cpu"]["per_op_us"])
        rate = med(g + z, lambda r: r["ops"] / r["seconds"])
        print(f"| {rate:,.0f} | {frac:.0%} | {lat(g)} | {lat(z)} | {gp/zp:.2f}x | {gc:.1f} | {zc:.1f} | {gc/zc:.2f}x |")
PY
echo
echo "raw results: $RES"
