#!/usr/bin/env bash
# Where the CPU of an ensemble goes under write load, on this machine: for
# each size, start a Giraffe ensemble (forest 3-3, fsync on), run the write
# benchmark, and report the CPU time every server process used (utime +
# stime from /proc) per acknowledged write, the leader's share, and whether
# the machine's cores were saturated. Explains why throughput falls with N
# when all servers share one machine.
# Usage: scripts/ensemble-cpu-per-write.sh [DURATION] [SIZES]   (defaults 5s, "3 9")
set -euo pipefail
cd "$(dirname "$0")/.."
DUR="${1:-5s}"
SIZES="${2:-3 9}"
BIN="$PWD/bin/giraffe"
DIR="$(mktemp -d)"
go build -o "$BIN" ./cmd/giraffe
trap '"$BIN" cluster stop --dir "$DIR/c" > /dev/null 2>&1 || true; rm -rf "$DIR"' EXIT
HZ=$(getconf CLK_TCK)
cores=$(nproc)
echo "| servers | writes/s | CPU ms per write (all servers) | leader's share | CPU used / available |"
echo "|---|---|---|---|---|"
for n in $SIZES; do
  rm -rf "$DIR/c"
  "$BIN" cluster start --nodes "$n" --trees 3 --children 3 --dir "$DIR/c" --base-port 26180 > /dev/null
  servers=$(python3 -c "import json; c=json.load(open('$DIR/c/cluster.json')); print(','.join(s['client_address'] for s in c['servers']))")
  pids=$(python3 -c "import json; c=json.load(open('$DIR/c/cluster.json')); print(' '.join(str(s['pid']) for s in c['servers']))")
  leader=$("$BIN" cluster status --dir "$DIR/c" --json | python3 -c "import json,sys; print([s['pid'] for s in json.load(sys.stdin) if s['role']=='leader'][0])")
  ticks() { local t=0; for p in $1; do set -- $(cut -d' ' -f14,15 /proc/$p/stat); t=$((t + $1 + $2)); done; echo $t; }
  "$BIN" bench --servers "$servers" --workload write --sessions 8 --outstanding 64 --value-size 1024 --warmup 2s --duration 1s --quiet > /dev/null
  t0=$(ticks "$pids"); l0=$(ticks "$leader"); s0=$(date +%s.%N)
  out=$("$BIN" bench --servers "$servers" --workload write --sessions 8 --outstanding 64 --value-size 1024 --warmup 0s --duration "$DUR" --quiet --json)
  t1=$(ticks "$pids"); l1=$(ticks "$leader"); s1=$(date +%s.%N)
  python3 - "$out" "$t0" "$t1" "$l0" "$l1" "$s0" "$s1" "$HZ" "$cores" "$n" <<'PY'
import json,sys
o=json.loads(sys.argv[1]); t0,t1,l0,l1=map(int,sys.argv[2:6]); s0,s1=map(float,sys.argv[6:8]); hz=int(sys.argv[8]); cores=int(sys.argv[9]); n=sys.argv[10]
secs=s1-s0; cpu=(t1-t0)/hz
writes=o["ops"]; rate=o["throughput_ops"]
print("| %s | %.0f | %.3f | %.0f%% | %.0f%% |"%(n, rate, 1000*cpu/writes if writes else 0, 100*(l1-l0)/max(t1-t0,1), 100*cpu/(secs*cores)))
PY
  "$BIN" cluster stop --dir "$DIR/c" > /dev/null
done
