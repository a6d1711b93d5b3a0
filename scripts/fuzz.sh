#!/usr/bin/env bash
# Bounded fuzzing run: builds the libFuzzer targets (preset `fuzz`, clang + ASan/UBSan) and runs each
# for SECONDS seconds (default 60) from the seed corpora in tests/data and fuzz/seeds. Any crash,
# sanitizer report, leak or timeout fails the run; libFuzzer leaves the input as crash-*/leak-*/
# timeout-* in build/fuzz/findings/.
#   scripts/fuzz.sh            # 60 s per target
#   scripts/fuzz.sh 600        # 10 minutes per target
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
seconds=${1:-60}
targets=(fuzz_chat_template fuzz_tokenizer_json fuzz_tokenizer_encode fuzz_safetensors fuzz_gguf fuzz_openai_request
         fuzz_model_config fuzz_step_rows fuzz_regex fuzz_gbnf fuzz_json_schema fuzz_reasoning fuzz_speculative)

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "${JOBS:-$(nproc)}" --target "${targets[@]}"

work=build/fuzz/work
findings=build/fuzz/findings
rm -rf "$work"
mkdir -p "$work" "$findings"
# Seeds: the 17 real chat templates, tokenizer.json samples, the tokenizer test texts, small
# safetensors files, small GGUF files written by gguf::Writer (tensors of the computed types, every
# value type with arrays of arrays, a version-2 vocab-only file), the config.json of every
# architecture's test model, regex patterns (JSON Schema formats, every construct, some refusals)
# GBNF grammars and JSON Schemas.
mkdir -p "$work/fuzz_chat_template" "$work/fuzz_tokenizer_json" "$work/fuzz_tokenizer_encode" "$work/fuzz_safetensors" \
  "$work/fuzz_gguf" "$work/fuzz_openai_request" "$work/fuzz_model_config" "$work/fuzz_step_rows" "$work/fuzz_regex" \
  "$work/fuzz_gbnf" "$work/fuzz_json_schema" "$work/fuzz_reasoning" "$work/fuzz_speculative"
# Think blocks: each start mode (byte 0) and cut step (byte 1) over typical outputs.
printf '\000\003<think>\nhmm\n</think>\n\nAnswer' >"$work/fuzz_reasoning/block"
printf '\001\001First.\n</think>\n\n4' >"$work/fuzz_reasoning/inside"
printf '\000\002 <thin <think>a</thi' >"$work/fuzz_reasoning/partial"
cp tests/data/chat-templates/*.jinja "$work/fuzz_chat_template/"
cp fuzz/seeds/tokenizer_json/*.json "$work/fuzz_tokenizer_json/"
cp fuzz/seeds/openai_request/*.json "$work/fuzz_openai_request/"
cp fuzz/seeds/model_config/*.json "$work/fuzz_model_config/"
cp fuzz/seeds/gguf/*.gguf "$work/fuzz_gguf/"
cp fuzz/seeds/regex/* "$work/fuzz_regex/"
cp fuzz/seeds/gbnf/* "$work/fuzz_gbnf/"
cp fuzz/seeds/json_schema/* "$work/fuzz_json_schema/"
python3 - "$work/fuzz_tokenizer_encode" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
cases = json.load(open("tests/data/tokenizer-vectors/qwen2-cases.json"))["cases"]
for i, case in enumerate(cases):
    (out / f"case{i:03d}").write_text(case["text"], encoding="utf-8")
PY
# Small valid safetensors files (and near misses) for the parser.
python3 - "$work/fuzz_safetensors" <<'PY'
import json, struct, sys, pathlib
out = pathlib.Path(sys.argv[1])
def write(name, header, data):
    raw = json.dumps(header).encode()
    (out / name).write_bytes(struct.pack("<Q", len(raw)) + raw + data)
write("two", {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "b": {"dtype": "BF16", "shape": [1, 2], "data_offsets": [8, 12]},
              "__metadata__": {"format": "pt"}}, bytes(12))
write("f16", {"w": {"dtype": "F16", "shape": [3, 1], "data_offsets": [0, 6]}}, bytes(6))
write("empty", {}, b"")
write("gap", {"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8))
PY

status=0
for target in "${targets[@]}"; do
  echo "== $target for ${seconds}s" >&2
  max_len=4096
  [ "$target" = fuzz_tokenizer_json ] && max_len=16384
  if ! "build/fuzz/bin/$target" "$work/$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
       -rss_limit_mb=4096 -artifact_prefix="$findings/$target-" -print_final_stats=1 2>"$work/$target.log"; then
    echo "FAIL: $target found a problem (see $work/$target.log and $findings/)" >&2
    tail -40 "$work/$target.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/$target.log" >&2 || true
  fi
done
exit $status
