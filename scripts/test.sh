#!/usr/bin/env bash
# The test command: installs what is missing, builds with warnings as errors, runs every test.
#   scripts/test.sh            # preset ci (Release, -Werror, CUDA when nvcc is found)
#   PRESET=asan-ubsan scripts/test.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
preset=${PRESET:-ci}
jobs=${JOBS:-$(nproc)}

scripts/install-deps.sh
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs"
