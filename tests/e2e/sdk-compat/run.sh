#!/usr/bin/env bash
# Runs the client-compatibility suites (tests/e2e/sdk-compat/suites/*.test.mjs: the Vercel AI SDK,
# LangChain JS, openai-node, pinned in package.json) with node's test runner, on the node >= 22 those
# SDKs need (lib/preflight.sh: the one this folder's npm packages bring). Each suite starts its own
# llaisys-server through tests/e2e/server/lib/harness.mjs.
#
#   tests/e2e/sdk-compat/run.sh BUILD_DIR [suite files or node --test arguments]
#   e.g. tests/e2e/sdk-compat/run.sh build/ci suites/langchain.test.mjs
#
# BUILD_DIR/bin must hold llaisys-server, llaisys-mkmodel and llaisys-offline (LLAISYS_BIN_DIR
# overrides the bin directory); LLAISYS_E2E_SLOW and LLAISYS_E2E_KEEP as for tests/e2e/server.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:?usage: tests/e2e/sdk-compat/run.sh BUILD_DIR [suites...]}" && pwd)
shift
export LLAISYS_BUILD_DIR=$build
bin=${LLAISYS_BIN_DIR:-$build/bin}
export LLAISYS_BIN_DIR=$bin

# shellcheck source=lib/preflight.sh
source "$here/lib/preflight.sh"

cd "$here"
if [ $# -eq 0 ]; then set -- suites/*.test.mjs; fi
exec "$node" --test --test-concurrency=1 --test-reporter=spec "$@"
