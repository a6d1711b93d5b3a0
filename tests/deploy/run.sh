#!/usr/bin/env bash
# Runs the deployment manifest tests (tests/deploy/*.test.mjs) with node's test runner: the
# Kubernetes manifests of deploy/kubernetes parsed and checked against each other and against the
# real llaisys-server of BUILD_DIR (started with the Deployment's args on a free loopback port).
#
#   tests/deploy/run.sh BUILD_DIR [test files or node --test arguments]
#
# BUILD_DIR/bin must hold llaisys-server, llaisys-mkmodel and llaisys-offline (LLAISYS_BIN_DIR
# overrides the bin directory). The `yaml` package comes from the server e2e suites' npm folder
# (tests/e2e/server/node_modules, installed by scripts/install-deps.sh); the tests resolve it from
# there, so this folder needs no package.json of its own. LLAISYS_E2E_SLOW multiplies deadlines,
# LLAISYS_E2E_KEEP=1 keeps the temporary directory (models, server log).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:?usage: tests/deploy/run.sh BUILD_DIR [tests...]}" && pwd)
shift
export LLAISYS_BUILD_DIR=$build
bin=${LLAISYS_BIN_DIR:-$build/bin}
export LLAISYS_BIN_DIR=$bin

e2e=$here/../e2e/server who="deploy manifests"
# shellcheck source-path=SCRIPTDIR source=../e2e/server/lib/preflight.sh
source "$e2e/lib/preflight.sh"

cd "$here"
if [ $# -eq 0 ]; then set -- ./*.test.mjs; fi
exec node --test --test-concurrency=1 --test-reporter=spec "$@"
