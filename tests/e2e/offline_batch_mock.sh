#!/usr/bin/env bash
# llaisys-offline generate as a batch on the engine, over a Qwen2-vocabulary mock with the Qwen2
# tokenizer: .txt and .jsonl inputs, results in input order although they finish out of order, the
# same outputs batched as alone, progress lines, and a summary with the prefix-cache hit rate.
set -euo pipefail
offline=$1
tokenizer_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

model="$work/model"
mkdir -p "$model"
cp "$tokenizer_dir/tokenizer.json" "$tokenizer_dir/tokenizer_config.json" "$model/"
cat > "$model/config.json" <<'EOF'
{"architectures": ["LlaisysMockForCausalLM"], "vocab_size": 151936, "hidden_size": 8,
 "max_position_embeddings": 2048, "eos_token_id": 151645,
 "mock": {"text_vocab_size": 6000, "eos_period": 30}}
EOF

# .txt: one prompt per line, blank lines skipped, id = line number.
printf '%s\n' "The quick brown fox" "" "jumps over the lazy dog" "Once upon a time" > "$work/prompts.txt"
"$offline" generate --model "$model" --max-tokens 12 --progress lines "$work/prompts.txt" \
  > "$work/txt.out" 2> "$work/txt.err" || fail "txt run failed: $(cat "$work/txt.err")"
python3 - "$work/txt.out" <<'EOF' || fail "txt output"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["id"] for l in lines] == [1, 3, 4], [l["id"] for l in lines]
for l in lines:
    assert l["text"] and len(l["output_ids"]) <= 12 and l["finish_reason"] in ("stop", "length"), l
EOF
grep -q "^progress: 3/3 requests" "$work/txt.err" || fail "no plain progress lines: $(cat "$work/txt.err")"

# Chat-style inputs go through the model's chat template: a "messages" line and --chat .txt lines
# give the same prompt ids as rendering ChatML by hand.
printf '%s\n' '{"id": "m", "messages": [{"role": "user", "content": "The quick brown fox"}], "max_tokens": 4}' \
  | "$offline" generate --model "$model" --progress off > "$work/messages.out" 2>/dev/null || fail "messages run"
printf '%s\n' "The quick brown fox" > "$work/chat.txt"
"$offline" generate --model "$model" --chat --max-tokens 4 --progress off "$work/chat.txt" > "$work/chat.out" 2>/dev/null \
  || fail "--chat run"
printf '%s\n' '{"id": "r", "prompt": "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nThe quick brown fox<|im_end|>\n<|im_start|>assistant\n", "max_tokens": 4}' \
  | "$offline" generate --model "$model" --progress off > "$work/raw.out" 2>/dev/null || fail "raw run"
python3 - "$work/messages.out" "$work/chat.out" "$work/raw.out" <<'EOF' || fail "chat template prompts differ"
import json, sys
a, b, c = (json.loads(open(p).readline()) for p in sys.argv[1:4])
assert a["prompt_ids"] == b["prompt_ids"] == c["prompt_ids"], (a["prompt_ids"], b["prompt_ids"], c["prompt_ids"])
assert a["output_ids"] == b["output_ids"]
EOF
grep -q "^summary: 3 requests (0 failed)" "$work/txt.err" || fail "no summary"

# JSONL: 24 requests sharing a long system prompt; later lines ask for fewer tokens, so they finish
# first, yet come out in input order.
system=$(python3 -c 'print("You are a careful assistant. " * 20)')
python3 - "$system" > "$work/prompts.jsonl" <<'EOF'
import json, sys
for i in range(24):
    print(json.dumps({"id": f"q{i}", "prompt": sys.argv[1] + f" Question {i}: what is {i} + {i}?",
                      "max_tokens": 40 - i, "ignore_eos": True}))
EOF
"$offline" generate --model "$model" --progress off "$work/prompts.jsonl" > "$work/batch.out" 2> "$work/batch.err" \
  || fail "jsonl run failed: $(cat "$work/batch.err")"
python3 - "$work/batch.out" <<'EOF' || fail "jsonl output"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["id"] for l in lines] == [f"q{i}" for i in range(24)]
assert all(len(l["output_ids"]) == 40 - i for i, l in enumerate(lines))
assert sum(l["usage"]["cached_tokens"] for l in lines) > 0, "no prefix-cache hits"
EOF
grep -q "prefix cache: [1-9][0-9.]*% hit rate" "$work/batch.err" || fail "summary without hit rate: $(cat "$work/batch.err")"
grep -q "^progress" "$work/batch.err" && fail "--progress off printed progress"

# The same requests one at a time give the same outputs.
for i in 0 7 23; do
  sed -n "$((i + 1))p" "$work/prompts.jsonl" | "$offline" generate --model "$model" --progress off > "$work/alone.out" 2>/dev/null
  python3 - "$work/alone.out" "$work/batch.out" "$i" <<'EOF' || fail "request $i differs alone"
import json, sys
alone = json.loads(open(sys.argv[1]).readline())
batch = [json.loads(l) for l in open(sys.argv[2])][int(sys.argv[3])]
assert alone["output_ids"] == batch["output_ids"] and alone["text"] == batch["text"]
EOF
done
echo "offline batch e2e: ok"
