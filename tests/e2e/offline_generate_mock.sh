#!/usr/bin/env bash
# llaisys-offline generate on the mock model: one JSON line out per line in, in order, with
# per-line errors for bad input, and the same output for the same prompt.
set -euo pipefail
offline=$1
model=$2
out=$(printf '%s\n' \
  '{"id": "a", "prompt_ids": [1, 5, 9], "max_tokens": 8}' \
  'not json' \
  '{"id": "b", "prompt_ids": [1, 5, 9], "max_tokens": 8}' \
  '{"id": "c", "prompt_ids": [600]}' \
  '{"id": "d", "prompt_ids": [3], "max_tokens": 0}' \
  | "$offline" generate --model "$model" || true)
echo "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(echo "$out" | wc -l)" -eq 5 ] || fail "expected 5 output lines"
line() { echo "$out" | sed -n "${1}p"; }
echo "$(line 1)" | grep -q '"id":"a"' || fail "line 1 is not request a"
echo "$(line 2)" | grep -q '"error":{"message":"line 2: invalid JSON' || fail "line 2 should be a JSON error"
echo "$(line 4)" | grep -q "not a token id in \[0, 512)" || fail "line 4 should reject token 600"
echo "$(line 5)" | grep -q '"output_ids":\[\]' || fail "max_tokens 0 should generate nothing"
a=$(line 1 | sed -e 's/.*"output_ids":\(\[[^]]*\]\).*/\1/')
b=$(line 3 | sed -e 's/.*"output_ids":\(\[[^]]*\]\).*/\1/')
[ "$a" = "$b" ] || fail "same prompt, different outputs: $a vs $b"
[ "$(echo "$a" | tr ',' '\n' | wc -l)" -ge 1 ] || fail "no tokens generated"
echo "offline generate e2e: ok"
