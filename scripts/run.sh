#!/usr/bin/env bash
# The main job: installs what is missing, builds (release), creates the tiny Qwen2 test model on
# first use (cached under ~/.cache/llaisys) and runs a real generation through the whole stack.
#   scripts/run.sh                          # the built-in model
#   MODEL=/path/to/Qwen2.5-0.5B-Instruct scripts/run.sh   # a real Hugging Face Qwen2/Qwen2.5 directory
# Extra arguments go to llaisys-offline generate (e.g. --max-tokens 64 --temperature 0.7).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
bin=build/release/bin

model=${MODEL:-}
if [ -z "$model" ]; then
  model=${XDG_CACHE_HOME:-$HOME/.cache}/llaisys/tiny-qwen2
  if [ ! -f "$model/config.json" ]; then
    echo "== creating the tiny Qwen2 test model in $model (once)" >&2
    "$bin/llaisys-mkmodel" --shape tiny --force "$model" >/dev/null
  fi
  echo "== $model: the tiny Qwen2 shape with RANDOM weights (the real Qwen2 tokenizer and chat" >&2
  echo "   template), so its answers are noise. For real answers point MODEL at a downloaded" >&2
  echo "   Qwen2/Qwen2.5 directory: MODEL=/path/to/Qwen2.5-0.5B-Instruct scripts/run.sh" >&2
fi

echo "== llaisys-offline generate --model $model --chat examples/chat-prompts.txt" >&2
"$bin/llaisys-offline" generate --model "$model" --chat --max-tokens 32 "$@" examples/chat-prompts.txt
