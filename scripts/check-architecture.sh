#!/usr/bin/env bash
# Checks the package structure docs/architecture.md describes (make vet
# runs it):
#   - internal/launcher does not depend on server;
#   - the giraffe binary carries neither the simulator, porcupine nor
#     gonum/plot (they belong to giraffe-lab);
#   - nothing imports sim outside sim/, tests and the lab (cmd/giraffe-lab);
#   - every package is imported by another package or its tests, except
#     commands and examples;
#   - no .go file is over 800 lines;
#   - docs/architecture.md lists every package.
# Prints every violation; exits 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
fail=0
problem() {
  echo "architecture: $*"
  fail=1
}

if go list -deps ./internal/launcher | grep -qx "$mod/server"; then
  problem "internal/launcher depends on server"
fi

if bad=$(go list -deps ./cmd/giraffe | grep -E "^$mod/sim(/|$)|^github.com/anishathalye/porcupine|^gonum.org/v1/plot"); then
  problem "cmd/giraffe depends on $(echo $bad)"
fi

# importer imported, one pair a line, without tests.
while read -r importer imported; do
  case "$importer" in
    "$mod/sim" | "$mod"/sim/* | "$mod/cmd/giraffe-lab") continue ;;
  esac
  if [ "$imported" = "$mod/sim" ] || [[ "$imported" == "$mod"/sim/* ]]; then
    problem "$importer imports $imported (only sim/, tests and cmd/giraffe-lab may)"
  fi
done < <(go list -f '{{range .Imports}}{{$.ImportPath}} {{.}}{{"\n"}}{{end}}' ./...)

# Every package that is not a command must be imported by another package
# (by its code or its tests): one that only its own tests import is dead.
imported=$(go list -f '{{range .Imports}}{{$.ImportPath}} {{.}}{{"\n"}}{{end}}{{range .TestImports}}{{$.ImportPath}} {{.}}{{"\n"}}{{end}}{{range .XTestImports}}{{$.ImportPath}} {{.}}{{"\n"}}{{end}}' ./... |
  awk '$1 != $2 { print $2 }' | sort -u)
for p in $(go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./...); do
  if ! grep -qx "$p" <<<"$imported"; then
    problem "$p is imported by nothing"
  fi
done

while read -r n f; do
  if [ "$f" != total ] && [ "$n" -gt 800 ]; then
    problem "$f has $n lines (at most 800)"
  fi
done < <(find . -name '*.go' -not -path './.*' -print0 | xargs -0 wc -l)

for p in $(go list ./...); do
  rel=${p#"$mod"/}
  if ! grep -qF "| \`$rel\` |" docs/architecture.md; then
    problem "docs/architecture.md does not list $rel"
  fi
done

exit $fail
