#!/usr/bin/env bash
# Installs the server tests' pinned npm packages, the official OpenAI and Anthropic SDKs and
# ajv (package.json + package-lock.json beside this script), into DEST, never
# into the source tree (tests/npm-install.sh).
#   install.sh DEST        e.g. install.sh build/server-tests
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../npm-install.sh" "$here" "${1:?usage: install.sh DEST}" "server tests"
