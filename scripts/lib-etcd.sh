# Shared set-up of the scripts that run etcd beside Giraffe and ZooKeeper
# on this machine. Source it from the repository's root after
# scripts/lib-peers.sh (whose scratch directory OUT it uses): it builds
# bin/etcd-peer from peers/etcd, a module of its own so that etcd stays
# out of Giraffe's go.mod, stops the members it started at exit, and
# defines start_etcd, stop_etcd, etcd_followers and etcd_run.
#
# Member i (1..N) serves clients on 127.0.0.1:ETCD_PORT_BASE+i and its
# peers on ETCD_PORT_BASE+100+i (default base 29180: clear of ZooKeeper's
# 24180-26189 and Giraffe's 25180 and 27180 blocks in the scripts).
EPEER="$PWD/bin/etcd-peer"
(cd peers/etcd && go build -o "$EPEER" .)
EDIR="$OUT/etcd"
ETCD_PORT_BASE="${ETCD_PORT_BASE:-29180}"
trap 'stop_etcd > /dev/null 2>&1 || true; cleanup' EXIT

# start_etcd N [GOMAXPROCS]: starts a new etcd cluster of N members, each
# its own process, and waits until they agree on a leader and take a put;
# sets ES and EP to their client URLs and pids (comma-separated). A
# second argument sets the members' GOMAXPROCS (1 where Giraffe's servers
# run with GOMAXPROCS=1, as ZooKeeper then gets -XX:ActiveProcessorCount=1).
start_etcd() {
  local n=$1 procs=${2:-} i cluster="" urls=()
  rm -rf "$EDIR"; mkdir -p "$EDIR"; : > "$EDIR/pids"
  for i in $(seq 1 "$n"); do
    cluster+="${cluster:+,}e$i=http://127.0.0.1:$((ETCD_PORT_BASE + 100 + i))"
    urls+=("http://127.0.0.1:$((ETCD_PORT_BASE + i))")
  done
  for i in $(seq 1 "$n"); do
    # setsid: own session, so a Ctrl-C in the shell reaches the script's
    # cleanup, which stops the members, and not the members themselves.
    (exec env ${procs:+GOMAXPROCS=$procs} setsid "$EPEER" server --name "e$i" --dir "$EDIR/e$i" \
      --client-url "${urls[i-1]}" --peer-url "http://127.0.0.1:$((ETCD_PORT_BASE + 100 + i))" \
      --initial-cluster "$cluster" > "$EDIR/e$i.log" 2>&1 < /dev/null) &
    echo $! >> "$EDIR/pids"
  done
  ES=$(IFS=,; echo "${urls[*]}")
  EP=$(paste -sd, "$EDIR/pids")
  if ! "$EPEER" leader --endpoints "$ES" --wait 60s > /dev/null; then
    echo "etcd cluster did not elect a leader (logs in $EDIR)" >&2; return 1
  fi
}

# stop_etcd: stops what start_etcd started: SIGTERM, then SIGKILL to a
# member still there after 15 s (a leader stopping after its peers tries
# to hand its leadership over first, for seconds).
stop_etcd() {
  [ -f "$EDIR/pids" ] || return 0
  local pid
  for pid in $(cat "$EDIR/pids"); do kill "$pid" 2> /dev/null || true; done
  for _ in $(seq 1 75); do
    local alive=0
    for pid in $(cat "$EDIR/pids"); do kill -0 "$pid" 2> /dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.2
  done
  for pid in $(cat "$EDIR/pids"); do kill -9 "$pid" 2> /dev/null || true; done
  rm -f "$EDIR/pids"
}

# etcd_followers prints the client URLs of the members that follow.
etcd_followers() { "$EPEER" leader --endpoints "$ES" --followers; }

# etcd_run TAG WARMUP DURATION ARGS...: one etcd-peer load run on the
# cluster (JSON shaped like giraffe bench's, the members' CPU per put,
# fsync probe in OUT) appended to RES with the JSON members TAG first;
# --endpoints in ARGS replaces ES (the one-writer runs).
etcd_run() {
  local tag=$1 warm=$2 dur=$3; shift 3
  "$EPEER" load --endpoints "$ES" --pids "$EP" --fsync-dir "$OUT" --warmup "$warm" --duration "$dur" "$@" \
    | sed "s/^{/{$tag,/" >> "$RES"
}
