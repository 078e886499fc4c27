#!/usr/bin/env bash
# Installs the cluster tests' pinned npm packages (yaml and kubernetes-models,
# for the deploy/kubernetes.yaml check; package.json + package-lock.json
# beside this script) into DEST, never into the source tree (tests/npm-install.sh).
#   install.sh DEST        e.g. install.sh build/cluster-tests
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../npm-install.sh" "$here" "${1:?usage: install.sh DEST}" "cluster tests"
