#!/usr/bin/env bash
# llaisys-offline generate --speculative ngram on stories260K: the same JSONL output as without
# speculation (greedy), the summary reports accepted drafts on repetitive prompts, bad values refused.
set -euo pipefail
offline=$1
model=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
printf '%s\n' \
  'Once upon a time, there was a little girl named Lily. Lily liked to play. Once upon a time, there was' \
  'Tom had a red ball. Tom had a' \
  'The cat sat on the mat. The dog sat on the mat. The cat sat on the' > "$tmp/prompts.txt"
run() { "$offline" --threads 2 generate --model "$model" "$tmp/prompts.txt" --temperature 0 --max-tokens 80 --progress off "$@"; }
run > "$tmp/plain.jsonl" 2> "$tmp/plain.err"
run --speculative ngram --num-speculative-tokens 3 > "$tmp/ngram.jsonl" 2> "$tmp/ngram.err"
cmp -s "$tmp/plain.jsonl" "$tmp/ngram.jsonl" || { diff "$tmp/plain.jsonl" "$tmp/ngram.jsonl" | head -5; fail "outputs differ with speculation"; }
grep -q "speculative:" "$tmp/plain.err" && fail "a run without speculation reports drafts"
line=$(grep "speculative:" "$tmp/ngram.err") || fail "no speculative line in the summary"
echo "$line"
accepted=$(echo "$line" | sed -e 's/.*speculative: \([0-9]*\) of.*/\1/')
[ "$accepted" -gt 0 ] || fail "n-gram accepted no draft on repetitive prompts"
for bad in "--speculative draft" "--num-speculative-tokens 0" "--num-speculative-tokens 17"; do
  # shellcheck disable=SC2086
  if run $bad > /dev/null 2>&1; then fail "$bad was accepted"; fi
done
echo "offline speculative e2e: ok"
