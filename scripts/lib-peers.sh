# Shared set-up of the scripts that run Giraffe beside Apache ZooKeeper 3.9
# (../shared/peers/zookeeper, or a copy of it named by ZK_PEER when that
# directory is read-only) on this machine. Source it from the
# repository's root: it builds bin/giraffe, installs the ZooKeeper peer,
# makes a scratch directory (OUT, with ZKB for ZooKeeper and GDIR for
# Giraffe) removed at exit with whatever still runs there, and defines
# wait_zk.
PEER="${ZK_PEER:-../shared/peers/zookeeper}"
BIN="$PWD/bin/giraffe"
OUT="$(mktemp -d)"
go build -o "$BIN" ./cmd/giraffe
bash "$PEER/setup.sh" > /dev/null
ZKB="$OUT/zk"
GDIR="$OUT/giraffe"
cleanup() {
  "$BIN" cluster stop --dir "$GDIR" > /dev/null 2>&1 || true
  ZK_BASE="$ZKB" bash "$PEER/stop.sh" > /dev/null 2>&1 || true
  rm -rf "$OUT"
}
trap cleanup EXIT

# zk_leader_pid prints the pid of the ZooKeeper server that says it leads.
zk_leader_pid() {
  while read -r addr pid; do
    if printf srvr | timeout 2 bash -c "exec 3<>/dev/tcp/${addr%:*}/${addr#*:}; cat >&3; cat <&3" 2>/dev/null | grep -q "Mode: leader"; then
      echo "$pid"; return
    fi
  done < "$ZKB/pids"
}

# wait_zk waits until some ZooKeeper server says it leads.
wait_zk() {
  for _ in $(seq 1 300); do
    [ -n "$(zk_leader_pid)" ] && return 0
    sleep 0.2
  done
  echo "ZooKeeper ensemble did not elect a leader" >&2; return 1
}

# bench_run TAG SERVERS PIDS WARMUP DURATION ARGS...: one giraffe bench run
# (JSON, the servers' CPU per operation, fsync probe in OUT) appended to
# RES with the JSON members TAG (e.g. "system":"giraffe","nodes":3) first.
bench_run() {
  local tag=$1 servers=$2 pids=$3 warm=$4 dur=$5; shift 5
  "$BIN" bench --servers "$servers" --pids "$pids" --fsync-dir "$OUT" --warmup "$warm" --duration "$dur" \
    --quiet --json "$@" | sed "s/^{/{$tag,/" >> "$RES"
}

# start_pair N [ZK_JVM_OPTS]: starts a ZooKeeper ensemble of N servers and
# a Giraffe one of the same size (1: standalone; 3: classic; more: forest
# 3-3, or classic when CLASSIC=1), and sets ZS/ZP and GS/GP to their
# client addresses and pids (comma-separated). ZK_EXTRA_CFG adds zoo.cfg
# lines to ZooKeeper's servers, GIRAFFE_SET (space-separated key=value)
# to Giraffe's.
start_pair() {
  local n=$1 shape
  ZK_BASE="$ZKB" ZK_PORT_BASE=24180 ZK_JVM_OPTS="${2:-}" bash "$PEER/run.sh" "$n" > /dev/null
  ZS=$(cat "$ZKB/servers"); ZP=$(cut -d' ' -f2 "$ZKB/pids" | paste -sd,)
  rm -rf "$GDIR"
  case "$n" in
    1) shape=(--nodes 1) ;;
    3) shape=(--nodes 3 --classic) ;;
    *) if [ "${CLASSIC:-0}" = 1 ]; then shape=(--nodes "$n" --classic); else shape=(--nodes "$n" --trees 3 --children 3); fi ;;
  esac
  local kv
  for kv in ${GIRAFFE_SET:-}; do shape+=(--set "$kv"); done
  "$BIN" cluster start "${shape[@]}" --dir "$GDIR" --base-port 27180 > /dev/null
  GS=$(python3 -c "import json; c=json.load(open('$GDIR/cluster.json')); print(','.join(s['client_address'] for s in c['servers']))")
  GP=$(python3 -c "import json; c=json.load(open('$GDIR/cluster.json')); print(','.join(str(s['pid']) for s in c['servers']))")
}

# big_tree_pair ZNODES SNAPCOUNT: sets start_pair up for a tree of ZNODES
# znodes of 1 KiB: ZooKeeper's heap (it holds the tree in its JVM) unless
# ZK_HEAP says otherwise, and a snapshot every SNAPCOUNT writes on both.
big_tree_pair() {
  export ZK_HEAP="${ZK_HEAP:-$(( $1 / 1000000 * 3 + 1 ))g}"
  export ZK_EXTRA_CFG="snapCount=$2"
  export GIRAFFE_SET="snapCount=$2"
}

# stop_pair: stops what start_pair started.
stop_pair() {
  "$BIN" cluster stop --dir "$GDIR" > /dev/null
  ZK_BASE="$ZKB" bash "$PEER/stop.sh" > /dev/null 2>&1 || true
}

# warm_pair N: the same warm-up for both systems of start_pair: write, read
# and create phases of 3N+2 s each (round 0 in RES).
warm_pair() {
  local n=$1 warm="$((3 * $1 + 2))s" sys s p w
  for sys in zookeeper giraffe; do
    if [ "$sys" = zookeeper ]; then s=$ZS; p=$ZP; else s=$GS; p=$GP; fi
    for w in write read; do
      bench_run "\"system\":\"$sys\",\"nodes\":$n,\"round\":0" "$s" "$p" 0s "$warm" --workload "$w" --sessions 8 --outstanding 64
    done
    bench_run "\"system\":\"$sys\",\"nodes\":$n,\"round\":0" "$s" "$p" 0s "$warm" --workload create --sessions 1
  done
}
