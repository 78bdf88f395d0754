#!/usr/bin/env bash
# A follower that lost its disk catches up on a big tree, Giraffe classic-3
# beside a 3-server Apache ZooKeeper 3.9 (../shared/peers/zookeeper), both
# running at once on this machine with fsync on and a snapshot every
# SNAPCOUNT writes. Each system gets a tree of ZNODES znodes of 1 KiB
# (giraffe bench bigtree), then, one system at a time: a follower is
# killed, its data directory emptied but for myid, a synchronous reader and
# writer start on the leader (with background writes at RATE per second),
# the follower is started again and timed until it serves (Giraffe: its
# log says it installed the leader's snapshot and serves clients;
# ZooKeeper: `srvr` answers Mode: follower), for at most WAIT seconds.
# The systems take turns (ZooKeeper is stopped before Giraffe's tree is
# made), so that both trees never share the machine's memory. Prints a
# Markdown table; the raw results are kept in RESULTS (default: a
# temporary file).
# Usage: scripts/bench-catchup.sh [ZNODES] [DURATION]
#        (defaults 1000000, 40s; RATE 1000, SNAPCOUNT 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
ZNODES="${1:-1000000}"
DUR="${2:-40s}"
RATE="${RATE:-1000}"
WAIT="${WAIT:-180}"
SNAPCOUNT="${SNAPCOUNT:-100000}"
. scripts/lib-peers.sh
RES="${RESULTS:-$OUT/results.jsonl}"; : > "$RES"
big_tree_pair "$ZNODES" "$SNAPCOUNT"

now() { date +%s.%N; }
# until_ok CMD...: runs CMD every 0.1 s until it succeeds (0) or WAIT
# seconds pass (1).
until_ok() {
  local end=$(( $(date +%s) + WAIT ))
  until "$@"; do
    [ "$(date +%s)" -lt "$end" ] || return 1
    sleep 0.1
  done
}
srvr() { timeout 2 bash -c "exec 3<>/dev/tcp/${1%:*}/${1#*:}; printf srvr >&3; cat <&3" 2>/dev/null || true; }

# empty_data DIR: what a new disk holds, myid put back by the operator.
empty_data() {
  local myid; myid=$(cat "$1/myid")
  rm -rf "$1"; mkdir -p "$1"; echo "$myid" > "$1/myid"
}

# window LEADER_ADDR: the timed reader and writer on the leader, in the
# background; its JSON goes to $OUT/window.json.
window() {
  "$BIN" bench bigtree --servers "$1" --znodes "$ZNODES" --rate "$RATE" --duration "$DUR" --json > "$OUT/window.json" &
  WPID=$!
}

populate() { "$BIN" bench bigtree --servers "$1" --znodes "$ZNODES" --rate 0 --duration 1s --json > /dev/null; }
zk_follows() { srvr "$faddr" | grep -q "Mode: follower"; }
g_installed() { grep -q "installed snapshot" "$log"; }
g_serving() { sed -n '/installed snapshot/,$p' "$log" | grep -q "serving clients"; }

CLASSIC=1 start_pair 3
populate "$ZS"

# ZooKeeper: the first follower of $ZKB/pids.
lpid=$(zk_leader_pid)
while read -r addr pid; do
  if [ "$pid" != "$lpid" ]; then faddr=$addr; fpid=$pid; break; fi
done < "$ZKB/pids"
laddr=$(grep " $lpid\$" "$ZKB/pids" | cut -d' ' -f1)
fdir=$(readlink "/proc/$fpid/cwd")
mapfile -d '' cmd < "/proc/$fpid/cmdline"
kill -9 "$fpid"; while kill -0 "$fpid" 2>/dev/null; do sleep 0.05; done
empty_data "$fdir/data"
window "$laddr"
sleep 5
t0=$(now)
(cd "$fdir" && exec setsid "${cmd[@]}" > "$fdir/stdout.log" 2>&1 < /dev/null) &
newpid=$!
sed -i "s/ $fpid\$/ $newpid/" "$ZKB/pids"
t1=$t0; until_ok zk_follows && t1=$(now)
wait "$WPID"
python3 - "$OUT/window.json" "$t0" "$t1" <<'PY' >> "$RES"
import json, sys
w = json.load(open(sys.argv[1]))
t0, t1 = map(float, sys.argv[2:4])
print(json.dumps({"system": "zookeeper", "serving_s": t1 - t0 if t1 > t0 else None, "installed_s": None, "window": w}))
PY
ZK_BASE="$ZKB" bash "$PEER/stop.sh" > /dev/null 2>&1 || true
populate "$GS"

# Giraffe: a follower of the classic ensemble.
read -r lid fid < <("$BIN" cluster status --dir "$GDIR" --json | python3 -c "
import json, sys
s = json.load(sys.stdin)
l = [x['id'] for x in s if x['role'] == 'leader'][0]
print(l, [x['id'] for x in s if x['id'] != l][0])")
laddr=$(python3 -c "import json; c=json.load(open('$GDIR/cluster.json')); print([s['client_address'] for s in c['servers'] if s['id']==$lid][0])")
"$BIN" cluster kill "$fid" --dir "$GDIR" > /dev/null
empty_data "$GDIR/s$fid/data"
window "$laddr"
sleep 5
t0=$(now)
"$BIN" cluster restart "$fid" --dir "$GDIR" > /dev/null
log="$GDIR/s$fid/server.log"
t1=$t0; t2=$t0
until_ok g_installed && t1=$(now) && until_ok g_serving && t2=$(now)
wait "$WPID"
python3 - "$OUT/window.json" "$t0" "$t1" "$t2" <<'PY' >> "$RES"
import json, sys
w = json.load(open(sys.argv[1]))
t0, t1, t2 = map(float, sys.argv[2:5])
print(json.dumps({"system": "giraffe", "serving_s": t2 - t0 if t2 > t0 else None,
                  "installed_s": t1 - t0 if t1 > t0 else None, "window": w}))
PY
stop_pair

python3 - "$RES" "$ZNODES" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| system | znodes | follower serving after restart s | snapshot installed s | leader read max ms / over 50 ms | leader write max ms / over 50 ms |")
print("|---|---|---|---|---|---|")
for r in rows:
    w = r["window"]
    f = lambda v: "%.1f" % v if v is not None else "–"
    print("| %s | %s | %s | %s | %.1f / %d | %.1f / %d |" % (r["system"], format(int(sys.argv[2]), ","), f(r["serving_s"]), f(r["installed_s"]),
        w["read"]["latency_ms"]["max"], w["read"]["stalls"], w["write"]["latency_ms"]["max"], w["write"]["stalls"]))
PY
