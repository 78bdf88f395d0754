#!/usr/bin/env bash
# Figures 7-10 of "Performance and Reliability Isolation in ZooKeeper" on
# this machine: for 100% and 50% writes, the paper's seven client mixes
# (strong/weak = 6/0, 5/1, 4/2, 3/3, 2/4, 1/5, 0/6; giraffe bench ns: one
# session per client, one request outstanding) on five systems, all with
# fsync on:
#   off, dynamicfsync, shortcircuit  one classic-3 Giraffe ensemble, /1
#                                    strong and /2 weak, giraffe.weakMode
#                                    the system's name;
#   doublegiraffe                    two classic-3 Giraffe ensembles without
#                                    namespaces, the strong clients on one,
#                                    the weak on the other (the paper's
#                                    DoubleZooKeeper made of Giraffe);
#   doublezk                         the same with two Apache ZooKeeper 3.9
#                                    ensembles (the paper's DoubleZooKeeper).
# Every configuration starts fresh ensembles and stops them after; every
# system gets the same warm-up (WARMUP of load before measuring, which is
# also the JVMs' warm-up). Within a mix the systems run one after the
# other, their order rotated from mix to mix, so that drift on a shared
# machine spreads over all of them. A run that fails (an ensemble that
# does not start, a client closed by a leader change) is recorded and the
# series goes on.
# OUTDIR keeps results.jsonl (one line per run: bench ns's JSON tagged with
# system, strong_clients, weak_clients and elapsed_s, the configuration's
# wall time; or a "failed" message), the CDFs (cdf-SYSTEM-wRATIO-sSwW.csv),
# the stderr of the runs that wrote any (err-*.txt), and what giraffe-lab
# nsfigures makes of them: the Markdown tables (figures.md) and the plots
# (ns-figures-write*.png).
# Usage: scripts/bench-ns-figures.sh DURATION [OUTDIR]   (OUTDIR: a temporary directory by default)
# Env:   MIXES="6/0 3/3 0/6"  SYSTEMS="off doublezk"  RATIOS="1.0"  WARMUP=5s (defaults: everything, 5s)
#        DOCS=1 also writes the plots to docs/img/; BASE_PORT (Giraffe, default 27380) and
#        ZK_PORT_BASE (ZooKeeper, default 24380) move the ports; ZK_PEER names a copy of the
#        ZooKeeper peer directory when ../shared/peers/zookeeper is read-only.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR="${1:?usage: scripts/bench-ns-figures.sh DURATION [OUTDIR]}"
RESDIR="${2:-$(mktemp -d)}"
MIXES="${MIXES:-6/0 5/1 4/2 3/3 2/4 1/5 0/6}"
SYSTEMS="${SYSTEMS:-off dynamicfsync shortcircuit doublegiraffe doublezk}"
RATIOS="${RATIOS:-1.0 0.5}"
WARMUP="${WARMUP:-5s}"
GBASE="${BASE_PORT:-27380}"
ZBASE="${ZK_PORT_BASE:-24380}"
for sys in $SYSTEMS; do
  case "$sys" in
    off | dynamicfsync | shortcircuit | doublegiraffe | doublezk) ;;
    *) echo "bench-ns-figures: unknown system $sys" >&2; exit 2 ;;
  esac
done
mkdir -p "$RESDIR"
RESDIR="$(cd "$RESDIR" && pwd)"
. scripts/lib-peers.sh
# The second ensemble of the double systems (the first is lib-peers's).
GDIR2="$OUT/giraffe-weak"
ZKB2="$OUT/zk-weak"
stop_all() {
  "$BIN" cluster stop --dir "$GDIR" > /dev/null 2>&1 || true
  "$BIN" cluster stop --dir "$GDIR2" > /dev/null 2>&1 || true
  ZK_BASE="$ZKB" bash "$PEER/stop.sh" > /dev/null 2>&1 || true
  ZK_BASE="$ZKB2" bash "$PEER/stop.sh" > /dev/null 2>&1 || true
}
trap 'stop_all; cleanup' EXIT
trap 'exit 130' INT TERM
RES="$RESDIR/results.jsonl"; : > "$RES"
# The JVMs get one processor each when the launcher would give the Giraffe
# servers one (at least two servers of an ensemble per core).
ZK_OPTS=""
if [ 3 -ge $((2 * $(nproc))) ]; then ZK_OPTS="-XX:ActiveProcessorCount=1"; fi

# The functions below run in `if` conditions, where set -e does not act:
# each step says itself when it failed.

# giraffe_start DIR BASE ARGS...: a fresh classic-3 Giraffe ensemble; prints its client addresses.
giraffe_start() {
  local dir=$1 base=$2; shift 2
  rm -rf "$dir"
  "$BIN" cluster start --nodes 3 --classic --dir "$dir" --base-port "$base" "$@" > /dev/null || return 1
  echo "127.0.0.1:$base,127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2))"
}

# zk_start DIR PORTBASE: a fresh 3-server ZooKeeper ensemble with a leader; prints its client addresses.
zk_start() {
  local out
  if ! out=$(ZK_BASE="$1" ZK_PORT_BASE="$2" ZK_JVM_OPTS="$ZK_OPTS" bash "$PEER/run.sh" 3 2>&1); then
    echo "$out" >&2; return 1
  fi
  cat "$1/servers"
}

# start SYSTEM: fresh ensembles for SYSTEM; sets SS and WS, the strong and weak clients' servers.
start() {
  case "$1" in
    off | dynamicfsync | shortcircuit)
      SS=$(giraffe_start "$GDIR" "$GBASE" --set giraffe.namespace.1=strong \
        --set giraffe.namespace.2=weak --set "giraffe.weakMode=$1") || return 1
      WS=$SS ;;
    doublegiraffe)
      SS=$(giraffe_start "$GDIR" "$GBASE") || return 1
      WS=$(giraffe_start "$GDIR2" "$((GBASE + 20))") || return 1 ;;
    doublezk)
      SS=$(zk_start "$ZKB" "$ZBASE") || return 1
      WS=$(zk_start "$ZKB2" "$((ZBASE + 10))") || return 1 ;;
  esac
}

# fail SYSTEM RATIO S W T0 MESSAGE: record a failed run.
fail() {
  python3 -c 'import json, sys, time; a = sys.argv[1:]; print(json.dumps({"system": a[0], "write_ratio": float(a[1]),
    "strong_clients": int(a[2]), "weak_clients": int(a[3]), "elapsed_s": round(time.time() - float(a[4]), 1), "failed": a[5].strip()}))' \
    "$@" >> "$RES"
  echo "  failed: $(echo "$6" | tail -1)" >&2
}

# run SYSTEM RATIO S W: one configuration, from fresh ensembles to stopped ones.
run() {
  local sys=$1 ratio=$2 s=$3 w=$4 t0 name err out
  t0=$(date +%s.%N)
  name="$sys-w$(python3 -c "print(round(100 * $ratio))")-s${s}w${w}"
  err="$RESDIR/err-$name.txt"
  echo "$name" >&2
  if ! start "$sys" 2> "$err"; then
    stop_all
    fail "$sys" "$ratio" "$s" "$w" "$t0" "start: $(cat "$err")"
    return
  fi
  # A leader change closes the connections of a server whose
  # early-answered writes were lost, and bench ns stops at its first
  # failed client: the run is recorded as failed.
  if out=$("$BIN" bench ns --servers "$SS" --weak-servers "$WS" --strong "$s" --weak "$w" \
      --write-ratio "$ratio" --warmup "$WARMUP" --duration "$DUR" --json --cdf "$RESDIR/cdf-$name.csv" 2>> "$err"); then
    stop_all
    python3 -c 'import json, sys, time; a = sys.argv[1:]; r = json.loads(a[5])
print(json.dumps({"system": a[0], "strong_clients": int(a[2]), "weak_clients": int(a[3]),
                  "elapsed_s": round(time.time() - float(a[4]), 1), **r}))' "$sys" "$ratio" "$s" "$w" "$t0" "$out" >> "$RES"
  else
    stop_all
    fail "$sys" "$ratio" "$s" "$w" "$t0" "$(cat "$err")"
  fi
  if [ ! -s "$err" ]; then rm -f "$err"; fi
}

read -r -a systems <<< "$SYSTEMS"
T0=$SECONDS
k=0
for ratio in $RATIOS; do
  for mix in $MIXES; do
    s=${mix%/*} w=${mix#*/}
    # Rotate the systems' order from one mix to the next.
    for i in "${!systems[@]}"; do
      run "${systems[$(((i + k) % ${#systems[@]}))]}" "$ratio" "$s" "$w"
    done
    k=$((k + 1))
  done
done
echo "$(wc -l < "$RES") runs in $((SECONDS - T0)) s" >&2

LAB="$PWD/bin/giraffe-lab"
go build -o "$LAB" ./cmd/giraffe-lab
"$LAB" nsfigures ${DOCS:+--docs} "$RESDIR"
echo "results in $RESDIR"
