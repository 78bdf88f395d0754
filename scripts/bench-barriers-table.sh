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
. scripts/lib-peers.sh

echo "ZooKeeper 3.9.4, $N servers:"
ZK_BASE="$ZKB" ZK_PORT_BASE=24180 bash "$PEER/run.sh" "$N" > /dev/null
ZS=$(cat "$ZKB/servers")
wait_zk
"$BIN" bench barriers --servers "$ZS" --clients 20 --barriers 100 > /dev/null   # JVM warm-up
"$BIN" bench barriers --servers "$ZS" --clients "$CLIENTS" --barriers "$BARRIERS"
ZK_BASE="$ZKB" bash "$PEER/stop.sh" > /dev/null 2>&1 || true

echo
echo "Giraffe classic, $N servers:"
# No limit on connections per address, as the ZooKeeper peer is configured
# (all the clients come from 127.0.0.1; the default allows 60 per server).
"$BIN" cluster start --nodes "$N" --classic --dir "$GDIR" --base-port 25180 --set maxClientCnxns=0 > /dev/null
GS=$(python3 -c "print(','.join('127.0.0.1:%d' % (25180 + i) for i in range($N)))")
"$BIN" bench barriers --servers "$GS" --clients "$CLIENTS" --barriers "$BARRIERS"
