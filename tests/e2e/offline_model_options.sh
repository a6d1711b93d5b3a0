#!/usr/bin/env bash
# llaisys-offline --model-options reaches the plugin: a bad value is refused with the plugin's
# message, and good values show in the model's info line (bf16 KV cache, weights mapped) and still
# generate (the same greedy tokens with the weights mapped or read into memory).
set -uo pipefail
mkmodel=$1
offline=$2
work=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
"$mkmodel" --shape tiny "$work/tiny" > /dev/null || fail "mkmodel"
prompt='{"id": "a", "prompt_ids": [1, 5, 9, 200], "max_tokens": 6}'

if err=$(echo "$prompt" | "$offline" --model-options '{"kv_dtype": "fp8"}' generate --model "$work/tiny" 2>&1); then
  fail "kv_dtype fp8 was accepted"
fi
echo "$err" | grep -q 'option kv_dtype: expected "f32" or "bf16"' || fail "no kv_dtype error: $err"

run() {  # options -> stdout; the info log to $work/log
  echo "$prompt" | "$offline" --log-level info --model-options "$1" generate --model "$work/tiny" 2> "$work/log"
}
mapped=$(run '{"weights": "mmap", "kv_dtype": "bf16"}') || fail "mmap + bf16 KV run: $(cat "$work/log")"
grep -q "KV cache bf16" "$work/log" || fail "info line lacks 'KV cache bf16': $(cat "$work/log")"
grep -q "(mapped)" "$work/log" || fail "info line lacks '(mapped)': $(cat "$work/log")"
memory=$(run '{"weights": "memory", "kv_dtype": "bf16"}') || fail "memory + bf16 KV run: $(cat "$work/log")"
grep -q "read into huge-page memory" "$work/log" || fail "info line lacks the memory loading: $(cat "$work/log")"
ids() { echo "$1" | sed -e 's/.*"output_ids":\(\[[^]]*\]\).*/\1/'; }
[ -n "$(ids "$mapped")" ] && [ "$(ids "$mapped")" = "$(ids "$memory")" ] || fail "outputs differ: $mapped vs $memory"
echo "offline --model-options e2e: ok ($(ids "$mapped"))"
