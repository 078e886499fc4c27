#!/usr/bin/env bash
# Installs a test suite's pinned npm packages (package.json + package-lock.json
# in SRC) into DEST with `npm ci`, never into the source tree.
#   npm-install.sh SRC DEST NAME     (NAME labels the messages)
# Idempotent: does nothing when DEST's node_modules was installed from the
# same lock file (a stamp copy of the lock is kept inside node_modules).
set -euo pipefail
src=$(cd "${1:?usage: npm-install.sh SRC DEST NAME}" && pwd)
dest=${2:?usage: npm-install.sh SRC DEST NAME}
name=${3:?usage: npm-install.sh SRC DEST NAME}
mkdir -p "$dest"
stamp="$dest/node_modules/.splash-lock"
if [ -f "$stamp" ] && cmp -s "$stamp" "$src/package-lock.json" \
   && cmp -s "$dest/package.json" "$src/package.json"; then
    echo "$name: npm packages already installed in $dest"
    exit 0
fi
command -v npm >/dev/null || { echo "$name: npm not found (scripts/setup.sh installs it)" >&2; exit 1; }
cp "$src/package.json" "$src/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
cp "$src/package-lock.json" "$stamp"
echo "$name: npm packages installed in $dest"
