#!/usr/bin/env bash
# Installs the Debian packages listed in deps/debian-packages.txt that are not
# installed yet. Safe to run repeatedly; needs root (or sudo) only when
# something is missing. `--train` also installs the maintainer-only packages
# for retraining the demo model (the list's "# [train]" section).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
train=0
[ "${1:-}" = "--train" ] && train=1
# the packages above the "# [train]" marker, and with --train those below it
mapfile -t want < <(awk -v train=$train '/^# \[train\]/ { if (!train) exit } { print }' \
    "$here/deps/debian-packages.txt" | sed -e 's/#.*//' -e 's/[[:space:]]//g' | grep -v '^$')
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Node.js and npm run the tokenizer conformance suite against npm's reference
# implementations; the machine image may bring its own newer Node, so
# Debian's is installed only when none is on PATH.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    missing+=(nodejs npm)
fi
if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all ${#want[@]} Debian packages present"
    exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
