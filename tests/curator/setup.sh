#!/usr/bin/env bash
# Fetches Apache Curator and its dependencies (pom.xml) into ./lib through
# Maven, once: a stamp holding pom.xml's checksum says lib is up to date.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
LIB="$HERE/lib"
STAMP="$LIB/.pom.sha256"
SUM="$(sha256sum "$HERE/pom.xml" | cut -d' ' -f1)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$SUM" ]]; then
  exit 0
fi
command -v mvn >/dev/null || { echo "setup-curator: mvn not found (apt-get install -y maven)"; exit 1; }
command -v javac >/dev/null || { echo "setup-curator: javac not found (apt-get install -y openjdk-17-jdk-headless)"; exit 1; }
rm -rf "$LIB"
mkdir -p "$LIB"
mvn -q -B -Dstyle.color=never -f "$HERE/pom.xml" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$LIB"
echo "$SUM" > "$STAMP"
echo "setup-curator: $(ls "$LIB"/*.jar | wc -l) jars in $LIB"
