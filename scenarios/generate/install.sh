#!/usr/bin/env bash
# Installs what the benchmark generator needs (idempotent).
# LibreOffice Writer (full, not -nogui: the nogui build aborts when laying out
# documents with comments) and Debian's Python UNO bridge.
set -euo pipefail
# soffice alone is not enough: libreoffice-writer-nogui also provides it.
if dpkg-query -W -f='${Status}' libreoffice-writer 2>/dev/null | grep -q 'install ok installed' \
  && /usr/bin/python3 -c 'import uno' >/dev/null 2>&1; then
  echo "libreoffice-writer and python3-uno already installed"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends libreoffice-writer python3-uno
soffice --version
