#!/usr/bin/env bash
# Runs tests/java/script.zk through ZooKeeper 3.9's own Java CLI (zkCli,
# org.apache.zookeeper.ZooKeeperMain) against a fresh Giraffe server and
# compares the normalized transcript with script.expected, which is the
# transcript of the same script against Apache ZooKeeper 3.9.4.
# Env: GIRAFFE_BIN (the binary), ZK_LIB (directory of ZooKeeper jars).
# With --against-zookeeper HOST:PORT it prints the normalized transcript of a
# running ZooKeeper instead (how script.expected was made).
#
# The CLI prints watch events (a "WATCHER::" line, then "WatchedEvent ...")
# from its event thread while its main thread prints the commands' output,
# so the two interleave differently from run to run, against ZooKeeper as
# against Giraffe: the connection's SyncConnected event comes before or after
# "Created /cli". The comparison therefore takes each thread's lines apart
# and requires both in full and in order (every command's output, every
# event); only how they interleave is not compared.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ZK_LIB="${ZK_LIB:?set ZK_LIB to the ZooKeeper jars (make setup-java)}"
CP="$(ls "$ZK_LIB"/*.jar | tr '\n' ':')"
LOGCFG="$(cd "$ZK_LIB/.." && pwd)/logback.xml"

run_cli() { # $1 = host:port
  timeout 120 java -cp "$CP" -Dlogback.configurationFile="$LOGCFG" \
    org.apache.zookeeper.ZooKeeperMain -server "$1" < "$HERE/script.zk" 2>&1 \
    | sed -E -f "$HERE/normalize.sed"
}

by_thread() { # $1 = a normalized transcript
  awk '/^(WATCHER::|WatchedEvent )/ { ev[++n] = $0; next } { print }
       END { print "--- the event thread printed:"; for (i = 1; i <= n; i++) print ev[i] }' "$1"
}

if [[ "${1:-}" == "--against-zookeeper" ]]; then
  run_cli "$2"
  exit 0
fi

BIN="${GIRAFFE_BIN:?set GIRAFFE_BIN}"
DIR="$(mktemp -d)"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$BIN" server --data-dir "$DIR/data" --client-addr 127.0.0.1 --client-port "$PORT" > "$DIR/server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -rf "$DIR"' EXIT
for _ in $(seq 1 200); do
  if timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT; printf srvr >&3; cat <&3" 2>/dev/null | grep -q '^Mode: '; then break; fi
  sleep 0.05
done
run_cli "127.0.0.1:$PORT" > "$DIR/actual.txt"
if diff -u <(by_thread "$HERE/script.expected") <(by_thread "$DIR/actual.txt"); then
  echo "zkcli: 1 passed, 0 failed"
else
  echo "zkcli: transcript differs from ZooKeeper 3.9.4's (above); server log:"
  tail -20 "$DIR/server.log"
  echo "zkcli: 0 passed, 1 failed"
  exit 1
fi
