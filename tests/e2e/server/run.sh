#!/usr/bin/env bash
# Runs the llaisys-server end-to-end suites (tests/e2e/server/suites/*.test.mjs) with node's test
# runner. Each suite builds its models in a temporary directory and starts its own llaisys-server on
# a free loopback port.
#
#   tests/e2e/server/run.sh BUILD_DIR [suite files or node --test arguments]
#   e.g. tests/e2e/server/run.sh build/ci suites/hostile.test.mjs
#        tests/e2e/server/run.sh build/asan-ubsan suites/hostile.test.mjs   # the sanitizer build's server
#
# BUILD_DIR/bin must hold llaisys-server, llaisys-mkmodel and llaisys-offline (LLAISYS_BIN_DIR
# overrides the bin directory). LLAISYS_E2E_SLOW multiplies every deadline (ctest sets 4 in
# sanitizer builds); LLAISYS_E2E_KEEP=1 keeps the temporary directories (models, server logs).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:?usage: tests/e2e/server/run.sh BUILD_DIR [suites...]}" && pwd)
shift
export LLAISYS_BUILD_DIR=$build
bin=${LLAISYS_BIN_DIR:-$build/bin}
export LLAISYS_BIN_DIR=$bin

e2e=$here who="server e2e"
# shellcheck source=lib/preflight.sh
source "$here/lib/preflight.sh"

cd "$here"
if [ $# -eq 0 ]; then set -- suites/*.test.mjs; fi
exec node --test --test-concurrency=1 --test-reporter=spec "$@"
