#!/usr/bin/env bash
# The setting of Figures 11-14 of "Performance and Reliability Isolation in
# ZooKeeper" on this machine: a classic-3 Giraffe ensemble with fsync on and
# the paper's namespaces (/1 strong, /2 weak), 3 strong and 3 weak clients
# (giraffe bench ns: one session each, one request outstanding), 100% and
# 50% writes, for each weak mode (off, dynamicfsync, shortcircuit), a fresh
# ensemble per run. Prints a Markdown table; the JSON results and the
# latency CDFs (CSV) stay in OUTDIR.
# Usage: scripts/bench-ns-modes.sh [DURATION] [OUTDIR]   (defaults 30s, a temporary directory)
#        MODES="shortcircuit dynamicfsync off" runs the modes in another order.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR="${1:-30s}"
OUT="${2:-$(mktemp -d)}"
BASE="${BASE_PORT:-26180}"
BIN="$PWD/bin/giraffe"
go build -o "$BIN" ./cmd/giraffe
mkdir -p "$OUT"
GDIR="$OUT/cluster"
trap '"$BIN" cluster stop --dir "$GDIR" > /dev/null 2>&1 || true' EXIT
RES="$OUT/results.jsonl"; : > "$RES"
SERVERS="127.0.0.1:$BASE,127.0.0.1:$((BASE + 1)),127.0.0.1:$((BASE + 2))"

for ratio in 1.0 0.5; do
  for mode in ${MODES:-off dynamicfsync shortcircuit}; do
    rm -rf "$GDIR"
    "$BIN" cluster start --nodes 3 --classic --dir "$GDIR" --base-port "$BASE" \
      --set giraffe.namespace.1=strong --set giraffe.namespace.2=weak --set "giraffe.weakMode=$mode" > /dev/null
    # A run stops at its first failed client (a leader change closes the
    # connections of a server whose early-answered writes were lost): say
    # so and go on with the next.
    if out=$("$BIN" bench ns --servers "$SERVERS" --strong 3 --weak 3 --write-ratio "$ratio" \
        --warmup 5s --duration "$DUR" --json --cdf "$OUT/cdf-$mode-$ratio.csv" 2>&1); then
      echo "$out" | sed "s/^{/{\"mode\":\"$mode\",/" >> "$RES"
    else
      python3 -c 'import json,sys; print(json.dumps({"mode": sys.argv[1], "write_ratio": float(sys.argv[2]), "failed": sys.argv[3]}))' \
        "$mode" "$ratio" "$out" >> "$RES"
    fi
    "$BIN" cluster stop --dir "$GDIR" > /dev/null
  done
done

python3 - "$RES" "$DUR" "$OUT" <<'PY'
import json, sys
path, dur, out = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
failed = [r for r in rows if "failed" in r]
rows = [r for r in rows if "failed" not in r]
off = {r["write_ratio"]: r for r in rows if r["mode"] == "off"}
print(f"classic-3, fsync on, 3 strong + 3 weak clients, {dur} measured per run; CDFs in {out}\n")
print("| writes | mode | strong write mean / p50 / p99 ms | weak write mean / p50 / p99 ms | weak/strong write p50 | strong write p50 vs off | strong ops | weak ops |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    s, w = r["strong"], r["weak"]
    base = off[r["write_ratio"]]["strong"]["write_p50_ms"] if r["write_ratio"] in off else float("nan")
    print(f"| {100*r['write_ratio']:.0f}% | {r['mode']} "
          f"| {s['write_mean_ms']:.2f} / {s['write_p50_ms']:.2f} / {s['write_p99_ms']:.2f} "
          f"| {w['write_mean_ms']:.2f} / {w['write_p50_ms']:.2f} / {w['write_p99_ms']:.2f} "
          f"| {w['write_p50_ms']/s['write_p50_ms']:.2f} | {s['write_p50_ms']/base - 1:+.0%} "
          f"| {s['ops']} | {w['ops']} |")
print("\n| writes | mode | strong read mean / p50 / p99 ms | weak read mean / p50 / p99 ms |")
print("|---|---|---|---|")
for r in rows:
    if r["write_ratio"] >= 1:
        continue
    s, w = r["strong"], r["weak"]
    print(f"| {100*r['write_ratio']:.0f}% | {r['mode']} "
          f"| {s['read_mean_ms']:.2f} / {s['read_p50_ms']:.2f} / {s['read_p99_ms']:.2f} "
          f"| {w['read_mean_ms']:.2f} / {w['read_p50_ms']:.2f} / {w['read_p99_ms']:.2f} |")
for r in failed:
    print(f"\n{100*r['write_ratio']:.0f}% writes, {r['mode']}: failed: {r['failed'].strip()}")
PY
