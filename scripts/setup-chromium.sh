#!/usr/bin/env bash
# Installs Debian's Chromium for the console's browser tests (make
# setup-browser), unless it is there already. Playwright drives it through
# playwright-core, which downloads no browser of its own.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
chromium --version
