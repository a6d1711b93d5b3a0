#!/usr/bin/env bash
# Soak test of llaisys-server: starts its own server (the tiny Qwen2 and mock models, on a free
# loopback port, with an API key) and drives mixed traffic at it for MINUTES minutes from 12
# concurrent clients: streamed and non-streamed completions, requests aborted mid-stream,
# embeddings, hostile requests, slow and stalled readers. Every 10 s it prints the server's RSS, its
# open fds and the engine gauges of /metrics. It fails (exit 1) on any lost request, the server
# dying, RSS or fds growing beyond their bounds after the warm-up, or the engine not back to idle
# after the traffic; then prints a summary. The driver and its bounds: tests/e2e/server/soak/soak.mjs.
#
#   scripts/soak.sh MINUTES [BUILD_DIR] [driver options]
#   e.g. scripts/soak.sh 30                            # build/me
#        scripts/soak.sh 5 build/release --clients 16 --seed 42
#        scripts/soak.sh 60 --seed 42                    # build/me
#
# BUILD_DIR (default build/me) must hold bin/llaisys-server, llaisys-mkmodel and llaisys-offline
# with the qwen2 and mock plugins; LLAISYS_BIN_DIR overrides the bin directory, LLAISYS_E2E_KEEP=1
# keeps the temporary directory (models, server log), as for tests/e2e/server/run.sh. Driver
# options: --clients N, --seed N, --sample-seconds S, --warmup-seconds S, --rss-growth-mb MB,
# --fd-growth N, --fd-idle-slack N.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage="usage: scripts/soak.sh MINUTES [BUILD_DIR] [driver options]"
minutes=${1:?$usage}
if ! [[ $minutes =~ ^[0-9]+([.][0-9]+)?$ ]]; then
  echo "soak: MINUTES must be a number, got '$minutes' ($usage)" >&2
  exit 2
fi
shift
build_arg=$root/build/me
if [ $# -gt 0 ] && [[ $1 != --* ]]; then
  build_arg=$1
  shift
fi
if [ ! -d "$build_arg" ]; then
  echo "soak: build directory $build_arg does not exist ($usage)" >&2
  exit 2
fi
build=$(cd "$build_arg" && pwd)
export LLAISYS_BUILD_DIR=$build
bin=${LLAISYS_BIN_DIR:-$build/bin}
export LLAISYS_BIN_DIR=$bin

e2e=$root/tests/e2e/server
who=soak
# shellcheck source=../tests/e2e/server/lib/preflight.sh
source "$e2e/lib/preflight.sh"

cd "$e2e"
exec node soak/soak.mjs --minutes "$minutes" "$@"
