#!/bin/sh
# build-static.sh OUT [VERSION]: build the giraffe binary as the release
# artefacts ship it: statically linked (no cgo, so it runs on an image with
# no libc), without the build machine's paths, with VERSION stamped for
# `giraffe version`. The Dockerfile runs this script, and `make
# docker-check` runs it too, so the binary checked is the binary shipped.
set -eu
out=${1:?usage: build-static.sh OUT [VERSION]}
version=${2:-$(git describe --tags --always --dirty 2>/dev/null || echo unknown)}
CGO_ENABLED=0 exec go build -trimpath \
	-ldflags "-s -w -X github.com/giraffe-coord/giraffe/internal/buildinfo.Version=$version" \
	-o "$out" ./cmd/giraffe
