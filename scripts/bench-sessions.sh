#!/usr/bin/env bash
# Many sessions and watches, Giraffe beside Apache ZooKeeper 3.9
# (../shared/peers/zookeeper) at each size in SIZES (3: Giraffe classic;
# 9: Giraffe forest 3-3), both ensembles running on this machine with fsync
# on, no per-address connection limit (maxClientCnxns=0) and the same
# warm-up (write, read and create phases of 3N+2 s each; WARM=0 skips it).
# For each system in turn (ZooKeeper, then Giraffe; REPEATS times),
# giraffe bench sessions runs three phases, each its own run:
#   idle    SESSIONS sessions pinging every third of their 10 s timeout;
#           after SETTLE, over HOLD: each server's CPU (% of one core), the
#           bytes per second it writes to its log (Giraffe: the metric
#           giraffe_log_bytes_written_total, and the growth of its log
#           files; ZooKeeper: the growth of its log files up to their last
#           written byte, as they are preallocated), its connections;
#   expire  EXPIRING sessions with EPHEMERALS ephemerals each dropped
#           while an open-loop writer sets 1 KiB at RATE per second: the
#           writer's latency until every ephemeral is gone, and how long
#           that took;
#   watch   WATCHERS watchers of one znode, ROUNDS changes: the time from
#           the setData's reply to each notification, and missed ones.
# A server process holds at most about MAXPERSERVER (19,000) client
# connections under the open-file limit of 20,000, so each phase's
# sessions are capped at N x MAXPERSERVER, which the output says. Prints
# Markdown tables; the raw results are kept in RESULTS (default: a
# temporary file).
# Usage: scripts/bench-sessions.sh [SIZES] [SESSIONS] [EXPIRING] [WATCHERS]
#        (defaults "3 9", 100000, 10000, 10000; EPHEMERALS 10, RATE 5000,
#        ROUNDS 10, SETTLE 5s, HOLD 30s, REPEATS 1, MAXPERSERVER 19000)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES="${1:-3 9}"
SESSIONS="${2:-100000}"
EXPIRING="${3:-10000}"
WATCHERS="${4:-10000}"
EPHEMERALS="${EPHEMERALS:-10}"
RATE="${RATE:-5000}"
ROUNDS="${ROUNDS:-10}"
SETTLE="${SETTLE:-5s}"
HOLD="${HOLD:-30s}"
REPEATS="${REPEATS:-1}"
MAXPERSERVER="${MAXPERSERVER:-19000}"
. scripts/lib-peers.sh
RES="${RESULTS:-$OUT/results.jsonl}"; : > "$RES"
# ZooKeeper keeps every session and connection in its heap.
export ZK_HEAP="${ZK_HEAP:-1g}"
export GIRAFFE_SET="maxClientCnxns=0 ${GIRAFFE_SET:-}"

# capped COUNT N: COUNT, or what N servers can hold if that is less (said
# on stderr).
capped() {
  local want=$1 n=$2 limit=$(( $2 * MAXPERSERVER ))
  if [ "$want" -gt "$limit" ]; then
    echo "$n servers hold at most $limit sessions ($MAXPERSERVER each under the open-file limit): $want capped to $limit" >&2
    echo "$limit"
  else
    echo "$want"
  fi
}

run=0
for n in $SIZES; do
  zk_opts=""
  if [ "$n" -ge $((2 * $(nproc))) ]; then zk_opts="-XX:ActiveProcessorCount=1"; fi
  start_pair "$n" "$zk_opts"
  if [ "${WARM:-1}" = 1 ]; then warm_pair "$n"; fi
  sessions=$(capped "$SESSIONS" "$n"); expiring=$(capped "$EXPIRING" "$n"); watchers=$(capped "$WATCHERS" "$n")
  zdirs=$(for i in $(seq 1 "$n"); do printf '%s/zk%d/data,' "$ZKB" "$i"; done); zdirs=${zdirs%,}
  gmetrics=$(python3 -c "import json; c=json.load(open('$GDIR/cluster.json')); print(','.join(s['metrics_address'] for s in c['servers']))")
  gdirs=$(python3 -c "import json; c=json.load(open('$GDIR/cluster.json')); print(','.join(s['dir'] + '/data' for s in c['servers']))")
  for repeat in $(seq 1 "$REPEATS"); do
    for sys in zookeeper giraffe; do
      if [ "$sys" = zookeeper ]; then
        s=$ZS; p=$ZP; where=(--data-dirs "$zdirs")
      else
        s=$GS; p=$GP; where=(--metrics "$gmetrics" --data-dirs "$gdirs")
      fi
      for phase in idle expire watch; do
        # Each run connects from addresses of its own (127.R.0.2, ...), so
        # that no run waits for the ports an earlier one left.
        run=$((run + 1))
        echo "== $sys, $n servers, $phase (run $run)" >&2
        "$BIN" bench sessions --servers "$s" --pids "$p" "${where[@]}" --phases "$phase" \
          --source "127.$((run % 250 + 1)).0.2" --max-per-server "$MAXPERSERVER" \
          --sessions "$sessions" --settle "$SETTLE" --hold "$HOLD" \
          --expire-sessions "$expiring" --ephemerals "$EPHEMERALS" --rate "$RATE" \
          --watchers "$watchers" --rounds "$ROUNDS" --json > "$OUT/run.json" ||
          { echo "== $sys, $n servers, $phase failed: left out of the tables" >&2; continue; }
        sed "s/^{/{\"system\":\"$sys\",\"nodes\":$n,\"repeat\":$repeat,\"phase\":\"$phase\",/" "$OUT/run.json" >> "$RES"
      done
    done
  done
  stop_pair
done

python3 - "$RES" <<'PY'
import json, statistics, sys
# The warm-up's results land in the same file (lib-peers.sh): keep the phases'.
rows = [r for r in (json.loads(l) for l in open(sys.argv[1]) if l.strip()) if "phase" in r]
med = lambda v: statistics.median(v) if v else float("nan")
sizes = sorted({r["nodes"] for r in rows})
def cells(phase):
    for n in sizes:
        for sys_ in ("zookeeper", "giraffe"):
            rs = [r[phase] for r in rows if r["nodes"] == n and r["system"] == sys_ and r["phase"] == phase and r.get(phase)]
            if rs:
                yield n, sys_, rs
def per_server(rs, key):
    # The busiest server's figure in each run, then the median over runs.
    return med([max(s[key] for s in r["per_server"]) for r in rs if all(s.get(key) is not None for s in r["per_server"])])
print("**idle sessions** (pings only; per server: the busiest server's figure)\n")
print("| servers | system | sessions | CPU % of a core | log bytes/s (metric) | log bytes/s (files) | connections, busiest | lost |")
print("|---|---|---|---|---|---|---|---|")
for n, s, rs in cells("idle"):
    cap = " (capped)" if any(r.get("cap_note") for r in rs) else ""
    print("| %d | %s | %d%s | %.2f | %s | %.0f | %d | %d |" % (n, s, rs[0]["sessions"], cap, per_server(rs, "cpu_percent"),
        "%.0f" % per_server(rs, "log_bytes_per_sec") if rs[0]["per_server"][0].get("log_bytes_per_sec") is not None else "–",
        per_server(rs, "log_file_bytes_per_sec"), per_server(rs, "connections"), max(r["lost"] for r in rs)))
print("\n**expiring sessions under writes** (1 KiB setData, open loop)\n")
print("| servers | system | sessions x ephemerals | writes/s offered | expiry s (first / last) | write p50 / p99 / p99.9 / max ms | writes | errors |")
print("|---|---|---|---|---|---|---|---|")
for n, s, rs in cells("expire"):
    w = lambda k: med([r["writer"]["latency_ms"][k] for r in rs])
    print("| %d | %s | %d x %d | %.0f | %.2f / %.2f | %.2f / %.2f / %.2f / %.2f | %d | %d |" % (n, s, rs[0]["sessions"],
        rs[0]["ephemerals_per_session"], rs[0]["writer"]["offered_ops"], med([r["first_gone_seconds"] for r in rs]),
        med([r["expiry_seconds"] for r in rs]), w("p50"), w("p99"), w("p999"), w("max"),
        med([r["writer"]["ops"] for r in rs]), max(r["writer"]["errors"] for r in rs)))
print("\n**watchers of one znode** (from the setData's reply to each notification)\n")
print("| servers | system | watchers x rounds | notified | missed | p50 / p99 / max ms | slowest round's last ms | before the reply | from the setData's sending: p50 / p99 / max ms |")
print("|---|---|---|---|---|---|---|---|---|")
for n, s, rs in cells("watch"):
    l = lambda k, f="latency_ms": med([r[f][k] for r in rs])
    print("| %d | %s | %d x %d | %d | %d | %.2f / %.2f / %.2f | %.2f | %d | %.2f / %.2f / %.2f |" % (n, s, rs[0]["sessions"],
        rs[0]["rounds"], sum(r["notified"] for r in rs), sum(r["missed"] for r in rs), l("p50"), l("p99"), l("max"),
        med([max(r["round_last_ms"]) for r in rs]), sum(r["before_reply"] for r in rs),
        l("p50", "from_send_ms"), l("p99", "from_send_ms"), l("max", "from_send_ms")))
PY
echo "raw results: $RES (removed at exit unless RESULTS is set)" >&2
