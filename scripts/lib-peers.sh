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
