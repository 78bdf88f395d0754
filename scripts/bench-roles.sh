#!/usr/bin/env bash
# What each server of a real ensemble spends per write, by role, and what
# it did for it: the measurements the simulator's cost model is fitted to
# and checked against (docs/benchmarks.md, "The cost model against real
# servers"). For each shape in SHAPES (classic-N or forest-N-T-C) and each
# rate in RATES, a fresh ensemble (fsync on, GOMAXPROCS=1 per server)
# takes open-loop 1 KiB setData at that rate from 8 sessions spread over
# its servers (giraffe bench --rate). Over a window inside the measured
# time every server reports its role, its CPU time (utime + stime from
# /proc) and, from its metrics, its fsyncs and their time, the entries it
# persisted and applied, the client writes it received and the peer
# messages and bytes it sent and received; each line also gives the load
# generator's CPU time and the machine's cores, which the servers share
# with it. One JSON line per server goes to OUT (emptied first; default:
# standard output); `giraffe-lab costmodel --runs OUT` fits the cost model
# to them and checks its predictions.
# Usage: scripts/bench-roles.sh [SHAPES] [RATES] [WINDOW_S]
#   defaults "classic-3 classic-5 classic-7 classic-9 forest-9-3-3", "300 1000 3000", 8
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPES="${1:-classic-3 classic-5 classic-7 classic-9 forest-9-3-3}"
RATES="${2:-300 1000 3000}"
WINDOW="${3:-8}"
BIN="$PWD/bin/giraffe"
DIR="$(mktemp -d)"
OUTFILE="${OUT:-/dev/stdout}"
if [ -n "${OUT:-}" ]; then : > "$OUT"; fi
go build -o "$BIN" ./cmd/giraffe
trap '"$BIN" cluster stop --dir "$DIR/c" > /dev/null 2>&1 || true; rm -rf "$DIR"' EXIT

# snapshot prints one JSON object: per server (in cluster.json's order) its
# CPU ticks and the metrics the cost model uses.
snapshot() {
  python3 - "$DIR/c/cluster.json" "$(getconf CLK_TCK)" "$1" <<'PY'
import json, re, sys, time, urllib.request
c = json.load(open(sys.argv[1])); hz = int(sys.argv[2]); client = int(sys.argv[3])
def cpu(pid):
    st = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / hz
want = {
    "fsyncs": ("giraffe_fsync_seconds_count", None),
    "fsync_seconds": ("giraffe_fsync_seconds_sum", None),
    "persisted": ("giraffe_fsync_batch_entries_sum", None),
    "applied": ("giraffe_entries_applied_total", None),
    "client_writes": ("giraffe_requests_total", 'op="setData"'),
    "msgs_sent": ("giraffe_peer_messages_total", 'direction="sent"'),
    "msgs_recv": ("giraffe_peer_messages_total", 'direction="received"'),
    "bytes_sent": ("giraffe_peer_bytes_total", 'direction="sent"'),
    "bytes_recv": ("giraffe_peer_bytes_total", 'direction="received"'),
}
out = []
for s in c["servers"]:
    row = {"id": s["id"], "cpu_s": cpu(s["pid"]), "client_cpu_s": cpu(client), "at": time.time()}
    text = urllib.request.urlopen("http://%s/metrics" % s["metrics_address"], timeout=5).read().decode()
    for k, (name, label) in want.items():
        row[k] = 0.0
        for line in text.splitlines():
            if line.startswith(name + ("{" if label else " ")) and (label is None or label in line):
                row[k] += float(line.rsplit(" ", 1)[1])
    m = re.search(r'giraffe_role\{role="(\w+)"\} 1', text)
    row["role"] = m.group(1) if m else "unknown"
    out.append(row)
print(json.dumps(out))
PY
}

for shape in $SHAPES; do
  IFS=- read -r kind n trees children <<< "$shape"
  if [ "$kind" = classic ]; then args=(--classic); else args=(--trees "$trees" --children "$children"); fi
  for rate in $RATES; do
    rm -rf "$DIR/c"
    GOMAXPROCS=1 "$BIN" cluster start --nodes "$n" "${args[@]}" --dir "$DIR/c" --base-port 27180 > /dev/null
    servers=$(python3 -c "import json; c=json.load(open('$DIR/c/cluster.json')); print(','.join(s['client_address'] for s in c['servers']))")
    # Warm-up: 3 s of the same load, then the window inside the measured time.
    "$BIN" bench --servers "$servers" --workload write --sessions 8 --value-size 1024 --rate "$rate" \
      --warmup 3s --duration "$((WINDOW + 5))s" --quiet --json > "$DIR/bench.json" &
    bench=$!
    sleep 4
    snapshot "$bench" > "$DIR/a.json"
    sleep "$WINDOW"
    snapshot "$bench" > "$DIR/b.json"
    wait "$bench"
    python3 - "$shape" "$rate" "$DIR/a.json" "$DIR/b.json" "$DIR/bench.json" "$(nproc)" >> "$OUTFILE" <<'PY'
import json, sys
shape, rate, cores = sys.argv[1], float(sys.argv[2]), int(sys.argv[6])
a, b = json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
bench = json.load(open(sys.argv[5]))
secs = b[0]["at"] - a[0]["at"]
writes = sum(y["client_writes"] - x["client_writes"] for x, y in zip(a, b))
for x, y in zip(a, b):
    row = {"shape": shape, "rate": rate, "id": x["id"], "role": y["role"], "seconds": secs, "writes": writes,
           "cpu_us": 1e6 * (y["cpu_s"] - x["cpu_s"]),
           "client_cpu_us": 1e6 * (b[0]["client_cpu_s"] - a[0]["client_cpu_s"]), "cores": cores,
           "bench_p50_ms": bench["latency_ms"]["p50"], "bench_errors": bench.get("errors", 0)}
    for k in ("fsyncs", "fsync_seconds", "persisted", "applied", "client_writes", "msgs_sent", "msgs_recv", "bytes_sent", "bytes_recv"):
        row[k] = y[k] - x[k]
    print(json.dumps(row))
PY
    "$BIN" cluster stop --dir "$DIR/c" > /dev/null
  done
done
