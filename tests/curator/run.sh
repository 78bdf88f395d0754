#!/usr/bin/env bash
# Runs the Curator checks (src/) against a fresh Giraffe: a standalone server
# (`run.sh standalone`) or an ensemble of processes started with `giraffe
# cluster start` (`run.sh classic-3`, `run.sh forest-9-3-3`). Further
# arguments name the checks to run (all by default).
# Env: GIRAFFE_BIN (the binary). Needs ./setup.sh to have fetched lib/.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN="${GIRAFFE_BIN:?set GIRAFFE_BIN}"
TARGET="${1:?usage: run.sh standalone|classic-3|forest-9-3-3 [CHECK...]}"
shift
LIB="$HERE/lib"
[[ -f "$LIB/.pom.sha256" ]] || { echo "curator: no jars in $LIB (make setup-curator)"; exit 1; }
CP="$(ls "$LIB"/*.jar | tr '\n' ':')"

# Compile the checks when a source is newer than the classes.
BUILD="$HERE/build"
if [[ ! -f "$BUILD/.built" ]] || [[ -n "$(find "$HERE/src" -newer "$BUILD/.built" -name '*.java')" ]]; then
  rm -rf "$BUILD"
  mkdir -p "$BUILD"
  javac -nowarn -d "$BUILD" -cp "$CP" $(find "$HERE/src" -name '*.java')
  touch "$BUILD/.built"
fi

DIR="$(mktemp -d /tmp/giraffe-curator.XXXXXX)"
# zoo.cfg lines of every server: sessions from 4 s (the shortest a check
# asks for; a member with no session connected serves while its writes
# commit within a third of that, which a busy machine needs), TTL nodes
# on, and TTL and container nodes reaped every 200 ms.
SETS=(tickTime=200 minSessionTimeout=4000 maxSessionTimeout=60000
  zookeeper.extendedTypesEnabled=true znode.container.checkIntervalMs=200
  "4lw.commands.whitelist=*")

# free_base N: the first of N consecutive free ports below the ephemeral range.
free_base() {
  python3 - "$1" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
for _ in range(100):
    base = random.randint(10000, 32000)
    socks = []
    try:
        for p in range(base, base + n):
            s = socket.socket(); socks.append(s); s.bind(("127.0.0.1", p))
        print(base); sys.exit(0)
    except OSError:
        pass
    finally:
        for s in socks: s.close()
sys.exit("no free port range")
PY
}

case "$TARGET" in
standalone)
  PORT="$(free_base 1)"
  printf '%s\n' "${SETS[@]}" > "$DIR/zoo.cfg"
  "$BIN" server --config "$DIR/zoo.cfg" --data-dir "$DIR/data" --client-addr 127.0.0.1 --client-port "$PORT" \
    > "$DIR/server.log" 2>&1 &
  PID=$!
  trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -rf "$DIR"' EXIT
  for _ in $(seq 1 200); do
    if timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT; printf ruok >&3; cat <&3" 2>/dev/null | grep -q imok; then break; fi
    sleep 0.05
  done
  SERVERS="127.0.0.1:$PORT"
  ENSEMBLE=(- -)
  LOGS=("$DIR/server.log")
  ;;
classic-3 | forest-9-3-3)
  if [[ "$TARGET" == classic-3 ]]; then SHAPE=(--nodes 3 --classic); N=3; else SHAPE=(--nodes 9 --trees 3 --children 3); N=9; fi
  BASE="$(free_base $((4 * N)))"
  trap '"$BIN" cluster stop --dir "$DIR/cluster" >/dev/null 2>&1 || true; rm -rf "$DIR"' EXIT
  # An election timeout of 40 ticks (1 s, not 8): a member descheduled for
  # a few hundred ms on a busy machine does not start an election.
  ARGS=(--set giraffe.electionTicks=40)
  for kv in "${SETS[@]}"; do ARGS+=(--set "$kv"); done
  "$BIN" cluster start "${SHAPE[@]}" --dir "$DIR/cluster" --base-port "$BASE" "${ARGS[@]}" > "$DIR/start.log" 2>&1 \
    || { cat "$DIR/start.log"; exit 1; }
  SERVERS="$(seq -s, -f "127.0.0.1:%g" "$BASE" $((BASE + N - 1)))"
  ENSEMBLE=("$DIR/cluster" "$BIN")
  LOGS=("$DIR"/cluster/s*/server.log)
  ;;
*)
  echo "curator: unknown target $TARGET"
  exit 2
  ;;
esac

if java -cp "$BUILD:$CP" -Dorg.slf4j.simpleLogger.logFile="$DIR/curator.log" \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.showDateTime=true \
  giraffe.curator.Main "$TARGET" "$SERVERS" "${ENSEMBLE[@]}" "$@"; then
  exit 0
fi
echo "--- Curator's log (the end):"
tail -40 "$DIR/curator.log"
for log in "${LOGS[@]}"; do
  echo "--- $log (the end):"
  tail -15 "$log"
done
exit 1
