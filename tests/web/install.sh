#!/usr/bin/env bash
# Installs the web tests' pinned npm package, puppeteer-core (package.json +
# package-lock.json beside this script), into DEST, never into the source
# tree (tests/npm-install.sh). puppeteer-core downloads no browser: the tests
# drive Debian's chromium (deps/debian-packages.txt).
#   install.sh DEST        e.g. install.sh build/web-tests
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../npm-install.sh" "$here" "${1:?usage: install.sh DEST}" "web tests"
