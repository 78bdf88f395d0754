#!/usr/bin/env bash
# Where the CPU of an ensemble goes under write load, on this machine: for
# each size, start a Giraffe ensemble (forest 3-3, fsync on, as `giraffe
# cluster start` runs it), run the write benchmark, and report the CPU time
# per acknowledged write of every server process (utime + stime from /proc)
# and of the benchmark client, the leader's share, an average non-leader's,
# and whether the machine's cores were saturated. Then it fits the total
# CPU per write (servers + client) to A + N x m: m is what each server adds
# to every write, A what does not depend on the number of servers. On one
# machine throughput is at most cores / (A + N x m) once the cores are
# saturated, so the 9-server figure can be within 25% of the 3-server one
# only if A >= 15 m.
# Usage: scripts/ensemble-cpu-per-write.sh [DURATION] [SIZES]   (defaults 5s, "3 5 7 9")
set -euo pipefail
cd "$(dirname "$0")/.."
DUR="${1:-5s}"
SIZES="${2:-3 5 7 9}"
BIN="$PWD/bin/giraffe"
DIR="$(mktemp -d)"
go build -o "$BIN" ./cmd/giraffe
trap '"$BIN" cluster stop --dir "$DIR/c" > /dev/null 2>&1 || true; rm -rf "$DIR"' EXIT
HZ=$(getconf CLK_TCK)
cores=$(nproc)
: > "$DIR/rows"
echo "| servers | writes/s | CPU µs per write: all servers | leader | a non-leader (mean) | benchmark client | total | CPU used / available |"
echo "|---|---|---|---|---|---|---|---|"
for n in $SIZES; do
  rm -rf "$DIR/c"
  "$BIN" cluster start --nodes "$n" --trees 3 --children 3 --dir "$DIR/c" --base-port 26180 > /dev/null
  servers=$(python3 -c "import json; c=json.load(open('$DIR/c/cluster.json')); print(','.join(s['client_address'] for s in c['servers']))")
  pids=$(python3 -c "import json; c=json.load(open('$DIR/c/cluster.json')); print(' '.join(str(s['pid']) for s in c['servers']))")
  leader=$("$BIN" cluster status --dir "$DIR/c" --json | python3 -c "import json,sys; print([s['pid'] for s in json.load(sys.stdin) if s['role']=='leader'][0])")
  ticks() { local t=0; for p in $1; do set -- $(cut -d' ' -f14,15 /proc/$p/stat); t=$((t + $1 + $2)); done; echo $t; }
  "$BIN" bench --servers "$servers" --workload write --sessions 8 --outstanding 64 --value-size 1024 --warmup 2s --duration 1s --quiet > /dev/null
  t0=$(ticks "$pids"); l0=$(ticks "$leader"); s0=$(date +%s.%N)
  out=$(/usr/bin/time -f "%U %S" -o "$DIR/client.time" "$BIN" bench --servers "$servers" --workload write --sessions 8 --outstanding 64 --value-size 1024 --warmup 0s --duration "$DUR" --quiet --json)
  t1=$(ticks "$pids"); l1=$(ticks "$leader"); s1=$(date +%s.%N)
  python3 - "$out" "$t0" "$t1" "$l0" "$l1" "$s0" "$s1" "$HZ" "$cores" "$n" "$(cat "$DIR/client.time")" "$DIR/rows" <<'PY'
import json,sys
o=json.loads(sys.argv[1]); t0,t1,l0,l1=map(int,sys.argv[2:6]); s0,s1=map(float,sys.argv[6:8]); hz=int(sys.argv[8]); cores=int(sys.argv[9]); n=int(sys.argv[10])
cu,cs=map(float,sys.argv[11].split()); rows=sys.argv[12]
secs=s1-s0; cpu=(t1-t0)/hz; lead=(l1-l0)/hz; client=cu+cs
writes=o["ops"]; rate=o["throughput_ops"]
us=lambda x: 1e6*x/writes
print("| %d | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f%% |"%(n, rate, us(cpu), us(lead), us((cpu-lead)/(n-1)), us(client), us(cpu+client), 100*(cpu+client)/(secs*cores)))
open(rows,"a").write("%d %f\n"%(n, us(cpu+client)))
PY
  "$BIN" cluster stop --dir "$DIR/c" > /dev/null
done
python3 - "$DIR/rows" <<'PY'
import sys
pts=[tuple(map(float,l.split())) for l in open(sys.argv[1])]
if len(pts) >= 2:
    k=len(pts); sx=sum(p[0] for p in pts); sy=sum(p[1] for p in pts)
    sxx=sum(p[0]**2 for p in pts); sxy=sum(p[0]*p[1] for p in pts)
    m=(k*sxy-sx*sy)/(k*sxx-sx*sx); a=(sy-m*sx)/k
    print("\nleast-squares fit of total CPU per write: A = %.1f µs, m = %.1f µs per server (A/m = %.2f; the 25%% goal needs A/m >= 15)"%(a, m, a/m if m else float('inf')))
    if m > 0:
        print("bound on this machine's 9-server throughput relative to 3 servers once CPU-bound: (A+3m)/(A+9m) = %.2f"%((a+3*m)/(a+9*m)))
PY
