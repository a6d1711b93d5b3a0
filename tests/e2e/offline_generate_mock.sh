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
  '{"id": "f", "prompt_ids": [3], "n": 1000000}' \
  | "$offline" generate --model "$model" || true)
echo "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(echo "$out" | wc -l)" -eq 6 ] || fail "expected 6 output lines"
line() { echo "$out" | sed -n "${1}p"; }
echo "$(line 1)" | grep -q '"id":"a"' || fail "line 1 is not request a"
echo "$(line 2)" | grep -q '"error":{"message":"line 2: invalid JSON' || fail "line 2 should be a JSON error"
echo "$(line 4)" | grep -q "not a token id in \[0, 512)" || fail "line 4 should reject token 600"
echo "$(line 4)" | grep -q '"id":"c"' || fail "an error line should carry its request's id"
echo "$(line 6)" | grep -q 'n must be in \[1, 64\], got 1000000' || fail "line 6 should name the n it was given"
echo "$(line 5)" | grep -q '"output_ids":\[\]' || fail "max_tokens 0 should generate nothing"
a=$(line 1 | sed -e 's/.*"output_ids":\(\[[^]]*\]\).*/\1/')
b=$(line 3 | sed -e 's/.*"output_ids":\(\[[^]]*\]\).*/\1/')
[ "$a" = "$b" ] || fail "same prompt, different outputs: $a vs $b"
[ "$(echo "$a" | tr ',' '\n' | wc -l)" -ge 1 ] || fail "no tokens generated"
# A UTF-8 byte order mark before the first line (Windows editors) is not part of its JSON.
bom=$(printf '\xef\xbb\xbf{"id": "e", "prompt_ids": [1, 5, 9], "max_tokens": 8}\n' | "$offline" generate --model "$model")
echo "$bom" | grep -q '"id":"e"' || fail "a BOM broke the first line: $bom"
e=$(echo "$bom" | sed -e 's/.*"output_ids":\(\[[^]]*\]\).*/\1/')
[ "$e" = "$a" ] || fail "after a BOM, different outputs: $e vs $a"
echo "offline generate e2e: ok"
