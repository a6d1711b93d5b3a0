#!/usr/bin/env bash
# The main job: installs what is missing, builds (release) and runs llaisys-offline on the built-in
# default model. Extra arguments go to llaisys-offline generate.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release

model=tests/data/mock-model
echo "== llaisys-offline generate on the built-in mock model ($model)" >&2
echo "   (a deterministic stand-in with no weights; real models arrive with the Qwen2 plugin)" >&2
build/release/bin/llaisys-offline generate --model "$model" "$@" examples/prompts-ids.jsonl
