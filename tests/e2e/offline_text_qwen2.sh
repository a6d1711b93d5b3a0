#!/usr/bin/env bash
# llaisys-offline tokenize / detokenize / render on the Qwen2 tokenizer: one line out per line in,
# in order, per-line errors, ids that agree with the reference vectors, and a chat template render
# whose ids start with <|im_start|>.
set -euo pipefail
offline=$1
model=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

tok=$(printf '%s\n' \
  '{"id": "a", "text": "Hello world"}' \
  'not json' \
  '{"id": "c", "text": "<|im_start|>user\nhi<|im_end|>\n"}' \
  '{"text": 5}' \
  | "$offline" tokenize --model "$model" || true)
echo "$tok"
[ "$(echo "$tok" | wc -l)" -eq 4 ] || fail "tokenize: expected 4 output lines"
[ "$(echo "$tok" | sed -n 1p)" = '{"id":"a","ids":[9707,1879]}' ] || fail "tokenize: line 1"
echo "$tok" | sed -n 2p | grep -q '"error":{"message":"line 2: invalid JSON' || fail "tokenize: line 2 should be a JSON error"
[ "$(echo "$tok" | sed -n 3p)" = '{"id":"c","ids":[151644,872,198,6023,151645,198]}' ] || fail "tokenize: line 3"
echo "$tok" | sed -n 4p | grep -q "'text' must be a string" || fail "tokenize: line 4 should be an error"

detok=$(printf '%s\n' \
  '{"ids": [9707, 1879, 151645]}' \
  '{"ids": [9707, 151645], "skip_special_tokens": false}' \
  '{"ids": [151665]}' \
  | "$offline" detokenize --model "$model" || true)
echo "$detok"
[ "$(echo "$detok" | sed -n 1p)" = '{"text":"Hello world"}' ] || fail "detokenize: line 1"
[ "$(echo "$detok" | sed -n 2p)" = '{"text":"Hello<|im_end|>"}' ] || fail "detokenize: line 2"
echo "$detok" | sed -n 3p | grep -q "151665 is not a token id" || fail "detokenize: line 3 should be an error"

render=$(printf '%s\n' \
  '{"id": 7, "messages": [{"role": "user", "content": "Hi"}]}' \
  '{"messages": "nope"}' \
  | "$offline" render --model "$model" || true)
echo "$render"
echo "$render" | sed -n 1p | grep -q '^{"id":7,"text":"<|im_start|>system\\nYou are Qwen' || fail "render: line 1 text"
echo "$render" | sed -n 1p | grep -q '"ids":\[151644,8948,198,' || fail "render: line 1 ids"
echo "$render" | sed -n 1p | grep -q '<|im_start|>assistant\\n"' || fail "render: generation prompt"
echo "$render" | sed -n 2p | grep -q "'messages' must be an array" || fail "render: line 2 should be an error"
echo "offline text e2e: ok"
