#!/usr/bin/env bash
# Failover as clients see it, on this machine: for each size in SIZES (3:
# Giraffe classic; more: forest 3-3), KILLS times, a fresh ensemble (fsync
# on) takes synchronous setData from one writer per server (giraffe bench
# gap: Giraffe's client, which moves to another server keeping its
# session), the leader is killed with SIGKILL, and the longest time
# without a successful write is measured from the kill on: of any writer,
# and of each writer that started on a surviving server, with the writes
# those writers saw fail (a closed connection fails the write in flight).
# With ZNODES set, each ensemble first holds a tree of that many znodes of
# 1 KiB (giraffe bench bigtree; snapshots every SNAPCOUNT writes, default
# 100000), so that the new leader takes over a big state.
# Prints a Markdown table; the raw results are kept in RESULTS (default: a
# temporary file).
# Usage: scripts/bench-failover.sh [SIZES] [KILLS]   (defaults "3 9", 20)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES="${1:-3 9}"
KILLS="${2:-20}"
ZNODES="${ZNODES:-0}"
SNAPCOUNT="${SNAPCOUNT:-100000}"
BIN="$PWD/bin/giraffe"
OUT="$(mktemp -d)"
GDIR="$OUT/giraffe"
go build -o "$BIN" ./cmd/giraffe
trap '"$BIN" cluster stop --dir "$GDIR" > /dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
RES="${RESULTS:-$OUT/results.jsonl}"; : > "$RES"

# leader prints the id of the live leader, waiting up to 60 s for one (a
# big tree's populate can leave the ensemble electing).
leader() {
  for _ in $(seq 600); do
    "$BIN" cluster status --dir "$GDIR" --json | python3 -c \
      "import json,sys; l=[s['id'] for s in json.load(sys.stdin) if s['role']=='leader' and s['alive']]; print(l[0]) if l else sys.exit(1)" && return 0
    sleep 0.1
  done
  return 1
}

for n in $SIZES; do
  shape=(--nodes "$n" --trees 3 --children 3)
  [ "$n" -le 3 ] && shape=(--nodes "$n" --classic)
  for k in $(seq 1 "$KILLS"); do
    rm -rf "$GDIR"
    "$BIN" cluster start "${shape[@]}" --dir "$GDIR" --base-port 25180 --set "snapCount=$SNAPCOUNT" > /dev/null
    GS=$(python3 -c "import json; c=json.load(open('$GDIR/cluster.json')); print(','.join(s['client_address'] for s in c['servers']))")
    if [ "$ZNODES" -gt 0 ]; then
      "$BIN" bench bigtree --servers "$GS" --znodes "$ZNODES" --rate 0 --duration 1s --json > /dev/null
    fi
    L=$(leader)
    "$BIN" bench gap --servers "$GS" --writers "$n" --kill-cmd "$BIN cluster kill $L --dir $GDIR" --json \
      | sed "s/^{/{\"nodes\":$n,\"znodes\":$ZNODES,\"kill\":$k,\"leader\":$L,/" >> "$RES"
    "$BIN" cluster stop --dir "$GDIR" > /dev/null
  done
done

python3 - "$RES" "$KILLS" <<'PY'
import json, statistics, sys
path, kills = sys.argv[1:]
rows = [json.loads(l) for l in open(path) if l.strip()]
tree = f", {rows[0]['znodes']:,} znodes of 1 KiB in the tree" if rows and rows[0].get("znodes") else ""
print(f"Leader killed with SIGKILL under one synchronous writer per server, {kills} kills per size, a fresh ensemble each{tree}.\n")
print("| servers | longest gap, any writer (ms): median / max | longest gap of a writer on a surviving server (ms): median / max | writes failed on surviving servers' connections | every kill, any writer (ms) |")
print("|---|---|---|---|---|")
for n in sorted({r["nodes"] for r in rows}):
    rs = [r for r in rows if r["nodes"] == n]
    anyg = [r["max_gap_ms"] for r in rs]
    surv, failed = [], 0
    for r in rs:
        for w, g in enumerate(r["writer_max_gap_ms"]):
            if w % n != r["leader"] - 1:
                surv.append(g)
                failed += r["writer_errors"][w]
    print(f"| {n} | {statistics.median(anyg):.0f} / {max(anyg):.0f} | {statistics.median(surv):.0f} / {max(surv):.0f} | {failed} | " + ", ".join(f"{g:.0f}" for g in anyg) + " |")
PY
