#!/usr/bin/env bash
# llaisys-offline generate --speculative on stories260K:
#  - ngram, greedy and seeded sampling: the same JSONL output as without speculation;
#  - draft:DIR with a draft model (stories260K itself, and tiny-llama's Q8_0 GGUF file, which shares
#    its tokenizer): greedy output identical, the summary names the method and its acceptance;
#  - refused: an unknown method, 'draft:' alone, a missing directory, a draft whose tokenizer differs,
#    out-of-range token counts.
set -euo pipefail
offline=$1
model=$2
gguf_draft=$3
qwen2_tokenizer=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
printf '%s\n' \
  'Once upon a time, there was a little girl named Lily. Lily liked to play. Once upon a time, there was' \
  'Tom had a red ball. Tom had a' \
  'The cat sat on the mat. The dog sat on the mat. The cat sat on the' > "$tmp/prompts.txt"
run() { "$offline" --threads 2 generate --model "$model" "$tmp/prompts.txt" --max-tokens 80 --progress off "$@"; }
same() {  # same NAME ARGS...: the output equals the plain run's with the same sampling
  local name=$1; shift
  cmp -s "$tmp/plain-$name.jsonl" "$tmp/$name.jsonl" || { diff "$tmp/plain-$name.jsonl" "$tmp/$name.jsonl" | head -5; fail "$name: outputs differ with speculation"; }
}
accepted_of() {  # accepted_of FILE METHOD: accepted drafts in the summary of FILE
  local line
  line=$(grep "speculative ($2):" "$1") || fail "no 'speculative ($2)' line in $1"
  echo "$line" >&2
  echo "$line" | sed -e 's/.*): \([0-9]*\) of.*/\1/'
}

run --temperature 0 > "$tmp/plain-greedy.jsonl" 2> "$tmp/plain-greedy.err"
grep -q "speculative" "$tmp/plain-greedy.err" && fail "a run without speculation reports drafts"
run --temperature 0 --speculative ngram --num-speculative-tokens 3 > "$tmp/greedy.jsonl" 2> "$tmp/ngram.err"
same greedy
[ "$(accepted_of "$tmp/ngram.err" ngram)" -gt 0 ] || fail "n-gram accepted no draft on repetitive prompts"

# Seeded sampling: a guessed draft is checked against the row's own seeded draw: identical output.
run --temperature 0.8 --seed 7 > "$tmp/plain-sampled.jsonl" 2>/dev/null
run --temperature 0.8 --seed 7 --speculative ngram > "$tmp/sampled.jsonl" 2>/dev/null
same sampled

# Draft models: greedy output identical; a draft identical to the target is always right.
run --temperature 0 --speculative "draft:$model" > "$tmp/greedy.jsonl" 2> "$tmp/self.err"
same greedy
self_line=$(grep "speculative (draft):" "$tmp/self.err") || fail "no draft line"
echo "$self_line" | grep -q "(100.0%)" || fail "a draft equal to the target was not always accepted: $self_line"
run --temperature 0 --speculative "draft:$gguf_draft" --num-speculative-tokens 2 > "$tmp/greedy.jsonl" 2> "$tmp/gguf.err"
same greedy
accepted_of "$tmp/gguf.err" draft > /dev/null
# Sampled with a draft model: runs, reports, and every line is a complete result.
run --temperature 1.0 --seed 3 --speculative "draft:$model" > "$tmp/draft-sampled.jsonl" 2> "$tmp/draft-sampled.err"
[ "$(wc -l < "$tmp/draft-sampled.jsonl")" -eq 3 ] || fail "sampled draft run: $(cat "$tmp/draft-sampled.err")"
[ "$(accepted_of "$tmp/draft-sampled.err" draft)" -gt 0 ] || fail "sampled self-draft accepted nothing"

# A draft model with another tokenizer (the Qwen2 tokenizer on a mock model) is refused by name.
mismatch="$tmp/qwen2-mock"
mkdir -p "$mismatch"
cp "$qwen2_tokenizer/tokenizer.json" "$qwen2_tokenizer/tokenizer_config.json" "$mismatch/"
echo '{"architectures": ["LlaisysMockForCausalLM"], "vocab_size": 151936, "hidden_size": 8, "max_position_embeddings": 2048, "eos_token_id": 151645}' > "$mismatch/config.json"
if run --speculative "draft:$mismatch" > /dev/null 2> "$tmp/mismatch.err"; then fail "a draft with another tokenizer was accepted"; fi
grep -q "tokenizer differs" "$tmp/mismatch.err" || fail "mismatch message: $(tail -1 "$tmp/mismatch.err")"

for bad in "--speculative draft" "--speculative draft:" "--speculative draft:$tmp/none" "--num-speculative-tokens 0" \
           "--num-speculative-tokens 17"; do
  # shellcheck disable=SC2086
  if run $bad > /dev/null 2> "$tmp/bad.err"; then fail "$bad was accepted"; fi
  grep -qi "error\|speculative" "$tmp/bad.err" || fail "$bad: no message"
done
echo "offline speculative e2e: ok"
