#!/usr/bin/env bash
# Giraffe classic-3 beside a 3-server Apache ZooKeeper 3.9 and a 3-member
# etcd 3.7 (peers/etcd: embed, each member its own process), all three
# running at once on this machine with fsync on, measured in interleaved
# rounds (ZooKeeper, etcd, Giraffe, ZooKeeper, ...) after the same warm-up
# for each (a write phase of 3N+2 s). Each round runs, on each system:
# 1 KiB writes from 8 clients x 64 in flight (setData through giraffe
# bench's own client and through go-zookeeper for Giraffe and ZooKeeper;
# puts through clientv3, etcd-peer load, for etcd), and one synchronous
# writer (one write at a time) on a follower, so that its latency
# includes the hop to the leader. Every run reports the servers' own CPU
# per write. When the Giraffe servers run with GOMAXPROCS=1 (the
# launcher's choice at two servers or more per core), ZooKeeper's JVMs get
# -XX:ActiveProcessorCount=1 and etcd's members GOMAXPROCS=1. Prints
# Markdown tables of medians over the rounds and the ratios of Giraffe's
# to etcd's and ZooKeeper's; the raw results are kept in RESULTS
# (default: a temporary file).
# Usage: scripts/bench-vs-etcd.sh [ROUNDS] [DURATION]   (defaults 3, 5s)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
DUR="${2:-5s}"
N=3
. scripts/lib-peers.sh
. scripts/lib-etcd.sh
RES="${RESULTS:-$OUT/results.jsonl}"; : > "$RES"

# giraffe_follower prints the client address of a Giraffe server that
# serves and does not lead.
giraffe_follower() {
  "$BIN" cluster status --dir "$GDIR" --json | python3 -c "import json,sys
print([s['address'] for s in json.load(sys.stdin) if s['alive'] and s['serving'] and s['role'] != 'leader'][0])"
}

# zk_follower prints the client address of a ZooKeeper server that says
# it follows.
zk_follower() {
  local addr pid
  while read -r addr pid; do
    if printf srvr | timeout 2 bash -c "exec 3<>/dev/tcp/${addr%:*}/${addr#*:}; cat >&3; cat <&3" 2>/dev/null | grep -q "Mode: follower"; then
      echo "$addr"; return
    fi
  done < "$ZKB/pids"
}

procs=""; zk_opts=""
if [ "$N" -ge $((2 * $(nproc))) ]; then procs=1; zk_opts="-XX:ActiveProcessorCount=1"; fi
# start_pair and start_etcd return once every server serves and one leads.
start_pair "$N" "$zk_opts"
start_etcd "$N" "$procs"

warm="$((3 * N + 2))s"
for sys in zookeeper etcd giraffe; do
  tag="\"system\":\"$sys\",\"nodes\":$N,\"round\":0"
  case "$sys" in
    zookeeper) bench_run "$tag" "$ZS" "$ZP" 0s "$warm" --workload write --sessions 8 --outstanding 64 ;;
    giraffe) bench_run "$tag" "$GS" "$GP" 0s "$warm" --workload write --sessions 8 --outstanding 64 ;;
    etcd) etcd_run "$tag" 0s "$warm" --clients 8 --outstanding 64 ;;
  esac
done

for round in $(seq 1 "$ROUNDS"); do
  for sys in zookeeper etcd giraffe; do
    tag="\"system\":\"$sys\",\"nodes\":$N,\"round\":$round"
    case "$sys" in
      etcd)
        etcd_run "$tag" 1s "$DUR" --clients 8 --outstanding 64
        etcd_run "$tag" 1s "$DUR" --endpoints "$(etcd_followers | cut -d, -f1)" --one-writer
        ;;
      *)
        if [ "$sys" = zookeeper ]; then s=$ZS; p=$ZP; f=$(zk_follower); else s=$GS; p=$GP; f=$(giraffe_follower); fi
        bench_run "$tag" "$s" "$p" 1s "$DUR" --workload write --sessions 8 --outstanding 64
        bench_run "$tag" "$s" "$p" 1s "$DUR" --workload write --sessions 8 --outstanding 64 --client go-zookeeper
        bench_run "$tag" "$f" "$p" 1s "$DUR" --workload write --sessions 1 --outstanding 1
        ;;
    esac
  done
done
stop_pair
stop_etcd

python3 - "$RES" "$ROUNDS" "$DUR" <<'PY'
import json, statistics, sys
path, rounds, dur = sys.argv[1:]
rows = [json.loads(l) for l in open(path) if l.strip()]
rows = [r for r in rows if r["round"] > 0]
def pick(sys_, client, one):
    return [r for r in rows if r["system"] == sys_ and r["workload"] == "write" and r["client"] == client
            and (r["sessions"] == 1 and r["outstanding"] == 1) == one]
def med(rs, f):
    v = [f(r) for r in rs]
    return statistics.median(v) if v else float("nan")
tput = lambda rs: med(rs, lambda r: r["throughput_ops"])
cpu = lambda rs: med(rs, lambda r: r["server_cpu"]["per_op_us"])
p50 = lambda rs: med(rs, lambda r: r["latency_ms"]["p50"])
tail = lambda rs: f'{med(rs, lambda r: r["latency_ms"]["p99"]):.2f} / {med(rs, lambda r: r["latency_ms"]["p999"]):.2f}'
own = {"giraffe": "giraffe", "zookeeper": "giraffe", "etcd": "etcd-clientv3"}
names = {"giraffe": "Giraffe classic-3", "zookeeper": "ZooKeeper 3.9.4, 3 servers", "etcd": "etcd 3.7.3, 3 members"}
load = {s: pick(s, own[s], False) for s in own}
gozk = {s: pick(s, "go-zookeeper", False) for s in ("giraffe", "zookeeper")}
one = {s: pick(s, own[s], True) for s in own}
fs = [r["fsync_probe"]["p50_ms"] for r in rows if not r["fsync_probe"].get("skipped")]
print(f"Medians of {rounds} interleaved rounds of {dur}; fsync on; fsync probe p50 over the runs {min(fs):.2f}-{max(fs):.2f} ms.\n")
print("| system | writes/s, 8 x 64 | p99 / p99.9 ms | server CPU µs/write | go-zookeeper writes/s | go-zookeeper CPU µs/write | one writer on a follower: p50 ms | its p99 ms |")
print("|---|---|---|---|---|---|---|---|")
for s in ("giraffe", "zookeeper", "etcd"):
    gz = f"{tput(gozk[s]):,.0f} | {cpu(gozk[s]):.1f}" if s in gozk else "— | —"
    print(f"| {names[s]} | {tput(load[s]):,.0f} | {tail(load[s])} | {cpu(load[s]):.1f} | {gz} | {p50(one[s]):.2f} | {med(one[s], lambda r: r['latency_ms']['p99']):.2f} |")
print()
print("| Giraffe's ratio to | writes/s | server CPU per write | one-writer p50 latency | writes/s, Giraffe through go-zookeeper (ZooKeeper too, etcd through clientv3) |")
print("|---|---|---|---|---|")
g = "giraffe"
for s, goal in (("etcd", " (goal ≥ 2.5x, ≤ 0.3x, ≤ 0.7x)"), ("zookeeper", "")):
    print(f"| {names[s]}{goal} | {tput(load[g])/tput(load[s]):.2f}x | {cpu(load[g])/cpu(load[s]):.2f}x | "
          f"{p50(one[g])/p50(one[s]):.2f}x | {tput(gozk[g])/tput(gozk.get(s, load[s])):.2f}x |")
PY
echo
echo "raw results: $RES"
