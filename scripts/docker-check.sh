#!/usr/bin/env bash
# docker-check.sh (make docker-check): checks the packaging on a machine
# without a Docker engine or a running systemd.
#   - The Dockerfile parses and passes BuildKit's lint rules
#     (packaging/dockerlint), and builds its binary with
#     scripts/build-static.sh.
#   - That script's binary is statically linked, so it runs on the
#     distroless image, which has no libc.
#   - The binary, run as the image's non-root user (uid 65532) on the
#     image's zoo.cfg (ports moved to free ones, dataDir to a fresh
#     directory owned by that user), answers ruok with imok and serves
#     /metrics and /commands/ruok, then stops cleanly on SIGTERM.
#   - packaging/giraffe.service passes systemd-analyze verify with no
#     message at all (it exits 0 on unknown keys, so any output fails).
# Prints what failed; exits 1 if anything did.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/giraffe-docker-check.XXXXXX)
pid=
cleanup() {
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill "$pid"; fi
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "docker-check: $*" >&2
	[[ -f $work/server.log ]] && tail -20 "$work/server.log" >&2
	exit 1
}

echo "== Dockerfile: BuildKit parser and lint rules"
(cd packaging/dockerlint && go run . ../../Dockerfile) || fail "Dockerfile does not pass BuildKit's checks"
grep -q '^RUN scripts/build-static.sh ' Dockerfile || fail "the Dockerfile no longer builds with scripts/build-static.sh"

echo "== the image's binary is static"
scripts/build-static.sh "$work/giraffe" check
info=$(file "$work/giraffe")
echo "$info"
grep -q 'statically linked' <<<"$info" || fail "file does not say statically linked"
if ldd "$work/giraffe" >/dev/null 2>&1; then fail "ldd lists shared libraries"; fi
[[ $("$work/giraffe" version) == *check* ]] || fail "giraffe version does not show the stamped version"

echo "== it serves the image's zoo.cfg as uid 65532"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
client=$(free_port)
metrics=$(free_port)
[[ $client != "$metrics" ]] || metrics=$(free_port)
mkdir -p "$work/data" "$work/conf"
chmod 0755 "$work"
sed -e "s#^dataDir=.*#dataDir=$work/data#" -e "s#^clientPort=.*#clientPort=$client#" \
	-e "s#^metricsPort=.*#metricsPort=$metrics#" packaging/zoo.cfg >"$work/conf/zoo.cfg"
grep -q "^clientPort=$client\$" "$work/conf/zoo.cfg" || fail "packaging/zoo.cfg has no clientPort line"
as_image_user=()
if [[ $(id -u) == 0 ]]; then
	chown 65532:65532 "$work/data"
	as_image_user=(setpriv --reuid 65532 --regid 65532 --clear-groups)
fi
"${as_image_user[@]}" "$work/giraffe" server --config "$work/conf/zoo.cfg" >"$work/server.log" 2>&1 &
pid=$!
ruok() {
	exec 3<>"/dev/tcp/127.0.0.1/$client" || return 1
	printf ruok >&3
	local answer
	answer=$(timeout 5 cat <&3) || true
	exec 3<&-
	[[ $answer == imok ]]
}
for _ in $(seq 100); do
	ruok 2>/dev/null && break
	kill -0 "$pid" 2>/dev/null || fail "the server exited"
	sleep 0.1
done
ruok 2>/dev/null || fail "no imok on port $client within 10 s"
echo "ruok on $client: imok"
# The answers are read whole before grep: grep -q stops at its first
# match, and curl, cut off, would fail the pipeline.
page=$(curl -fsS "http://127.0.0.1:$metrics/metrics") || fail "GET /metrics on port $metrics failed"
grep -q '^giraffe_' <<<"$page" || fail "no giraffe_ metrics on port $metrics"
page=$(curl -fsS "http://127.0.0.1:$metrics/commands/ruok") || fail "GET /commands/ruok failed"
grep -q '"error": *null' <<<"$page" || fail "/commands/ruok answered $page"
echo "metrics and /commands/ruok on $metrics: ok"
kill -TERM "$pid"
wait "$pid" || fail "the server exited with status $? on SIGTERM"
pid=

echo "== systemd unit"
# verify checks that ExecStart's binary exists: point it at the one built.
sed "s#/usr/local/bin/giraffe#$work/giraffe#" packaging/giraffe.service >"$work/giraffe.service"
out=$(systemd-analyze verify "$work/giraffe.service" 2>&1) || fail "systemd-analyze verify: $out"
[[ -z $out ]] || fail "systemd-analyze verify: $out"
echo "packaging/giraffe.service: verified"
echo "docker-check: ok"
