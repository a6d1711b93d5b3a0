#!/usr/bin/env bash
# The main job: installs what is missing, builds (release) and runs real generations through the
# whole stack on the built-in models:
#   1. models/stories260K, the shipped demo model (TinyStories 260K, real trained weights, served by
#      the llama plugin): it writes short stories in English (examples/story-prompts.jsonl);
#   2. the tiny Qwen2 test model (created on first use under ~/.cache/llaisys; random weights, the real
#      Qwen2 tokenizer and chat template), in chat mode (examples/chat-prompts.txt);
#   3. llaisys-server with both models (OpenAI API and the web UI at http://127.0.0.1:8080/) until
#      Ctrl-C. NO_SERVER=1 skips it; PORT=... picks another port.
#   scripts/run.sh                                        # the built-in models
#   MODEL=/path/to/Qwen2.5-0.5B-Instruct scripts/run.sh   # a real Hugging Face Qwen2/Llama directory
# Extra arguments go to llaisys-offline generate (e.g. --max-tokens 64 --temperature 0.7).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
bin=build/release/bin

serve() {
  [ -n "${NO_SERVER:-}" ] && return 0
  echo "== llaisys-server $*: the OpenAI API and the web UI at http://127.0.0.1:${PORT:-8080}/ (Ctrl-C stops it)" >&2
  exec "$bin/llaisys-server" --host 127.0.0.1 --port "${PORT:-8080}" "$@"
}

if [ -n "${MODEL:-}" ]; then
  echo "== llaisys-offline generate --model $MODEL --chat examples/chat-prompts.txt" >&2
  "$bin/llaisys-offline" generate --model "$MODEL" --chat --max-tokens 32 "$@" examples/chat-prompts.txt
  serve --model "$MODEL"
  exit 0
fi

# 1. The demo model. Stories end when the model emits BOS (id 1), as in llama2.c.
echo "== llaisys-offline generate --model models/stories260K examples/story-prompts.jsonl" >&2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$bin/llaisys-offline" generate --model models/stories260K "$@" examples/story-prompts.jsonl | tee "$out"
python3 - "$out" examples/story-prompts.jsonl >&2 <<'PY'
import json, sys
prompts = {p["id"]: p["prompt"] for p in map(json.loads, open(sys.argv[2]))}
for r in map(json.loads, open(sys.argv[1])):
    if "text" in r:
        print(f"\n-- {r['id']}:\n{prompts.get(r['id'], '')}{r['text']}")
print()
PY
rm -f "$out"

# 2. The tiny Qwen2 shape, through the chat template.
model=${XDG_CACHE_HOME:-$HOME/.cache}/llaisys/tiny-qwen2
if [ ! -f "$model/config.json" ]; then
  echo "== creating the tiny Qwen2 test model in $model (once)" >&2
  "$bin/llaisys-mkmodel" --shape tiny --force "$model" >/dev/null
fi
echo "== $model: the tiny Qwen2 shape with RANDOM weights (the real Qwen2 tokenizer and chat" >&2
echo "   template), so its answers are noise. For real answers point MODEL at a downloaded" >&2
echo "   Qwen2/Qwen2.5 directory: MODEL=/path/to/Qwen2.5-0.5B-Instruct scripts/run.sh" >&2
echo "== llaisys-offline generate --model $model --chat examples/chat-prompts.txt" >&2
"$bin/llaisys-offline" generate --model "$model" --chat --max-tokens 32 "$@" examples/chat-prompts.txt

# 3. Both models behind the OpenAI-compatible server.
serve --model "stories260K=models/stories260K" --model "tiny-qwen2=$model"
