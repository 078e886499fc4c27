#!/usr/bin/env bash
# Installs the server tests' pinned npm packages, the official OpenAI SDK
# and ajv (package.json + package-lock.json beside this script), into DEST
# with `npm ci`, never into the source tree.
#   install.sh DEST        e.g. install.sh build/server-tests
# Idempotent: does nothing when DEST's node_modules was installed from the
# same lock file (a stamp copy of the lock is kept inside node_modules).
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
dest=${1:?usage: install.sh DEST}
mkdir -p "$dest"
stamp="$dest/node_modules/.splash-lock"
if [ -f "$stamp" ] && cmp -s "$stamp" "$src/package-lock.json" \
   && cmp -s "$dest/package.json" "$src/package.json"; then
    echo "server tests: npm packages already installed in $dest"
    exit 0
fi
command -v npm >/dev/null || { echo "server tests: npm not found (scripts/setup.sh installs it)" >&2; exit 1; }
cp "$src/package.json" "$src/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
cp "$src/package-lock.json" "$stamp"
echo "server tests: npm packages installed in $dest"
