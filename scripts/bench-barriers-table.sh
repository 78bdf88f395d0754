#!/usr/bin/env bash
# The ZooKeeper paper's Table 3 (§5.3, double barriers): C clients enter B
# barriers in succession, then leave them all, for C = 50, 100, 200 and
# B = 200 .. 1600, against a 3-server ZooKeeper 3.9 ensemble
# (../shared/peers/zookeeper) and a 3-server Giraffe ensemble (classic), one
# after the other in one run on this machine, fsync on. Prints the two
# Markdown tables (mean seconds per client; barrier operations per second).
# Usage: scripts/bench-barriers-table.sh [CLIENTS] [BARRIERS] [NODES]
#        (defaults "50,100,200", "200,400,800,1600", 3)
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS="${1:-50,100,200}"
BARRIERS="${2:-200,400,800,1600}"
N="${3:-3}"
PEER=../shared/peers/zookeeper
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

echo "ZooKeeper 3.9.4, $N servers:"
ZK_BASE="$ZKB" ZK_PORT_BASE=24180 bash "$PEER/run.sh" "$N" > /dev/null
ZS=$(cat "$ZKB/servers")
for _ in $(seq 1 100); do "$BIN" bench --servers "$ZS" --workload create --sessions 1 --warmup 0s --duration 1s --quiet > /dev/null 2>&1 && break; sleep 0.3; done
"$BIN" bench barriers --servers "$ZS" --clients 20 --barriers 100 > /dev/null   # JVM warm-up
"$BIN" bench barriers --servers "$ZS" --clients "$CLIENTS" --barriers "$BARRIERS"
ZK_BASE="$ZKB" bash "$PEER/stop.sh" > /dev/null 2>&1 || true

echo
echo "Giraffe classic, $N servers:"
"$BIN" cluster start --nodes "$N" --classic --dir "$GDIR" --base-port 25180 > /dev/null
GS=$(python3 -c "print(','.join('127.0.0.1:%d' % (25180 + i) for i in range($N)))")
"$BIN" bench barriers --servers "$GS" --clients "$CLIENTS" --barriers "$BARRIERS"
