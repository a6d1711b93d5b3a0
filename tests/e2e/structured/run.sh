#!/usr/bin/env bash
# Structured-output acceptance over the corpus (tests/data/json-schemas: 183 schemas, 47 regexes, 16
# choice lists) x 4 seeds at temperature 1, on the tiny random-weight Qwen2 and on stories260K
# (SentencePiece vocabulary with byte fallback): llaisys-offline generates, validate.mjs checks every
# stopped completion with ajv (2020-12 + formats), the JavaScript regex engine or the choice list,
# and every length-cut one as a valid JSON prefix; the unsupported schemas must be refused by name.
#   tests/e2e/structured/run.sh BUILD_DIR [MAX_TOKENS]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR [MAX_TOKENS]}" && pwd)
max_tokens=${2:-256}
bin=${LLAISYS_BIN_DIR:-$build/bin}
work=$(mktemp -d)
[ -n "${LLAISYS_E2E_KEEP:-}" ] && echo "keeping $work" >&2 || trap 'rm -rf "$work"' EXIT
cd "$root"

"$bin/llaisys-mkmodel" --shape tiny --seed 7 "$work/tiny-qwen2" >/dev/null
python3 "$here/make_cases.py" --out-dir "$work/cases" --seeds 0,1,2,3 --max-tokens "$max_tokens" --unsupported
status=0
for model in "$work/tiny-qwen2" "$root/models/stories260K"; do
  name=$(basename "$model")
  echo "== $name" >&2
  start=$(date +%s)
  # Exit status 1 means some lines were refused (the unsupported schemas must be); validate.mjs
  # checks that every case has its line.
  rc=0
  "$bin/llaisys-offline" generate --model "$model" --progress off --max-num-seqs 64 --max-context 2048 \
    "$work/cases/REQUESTS.jsonl" > "$work/results-$name.jsonl" 2> "$work/log-$name.txt" || rc=$?
  if [ "$rc" -gt 1 ]; then cat "$work/log-$name.txt" >&2; status=1; continue; fi
  tail -n 5 "$work/log-$name.txt" >&2
  echo "   generation took $(( $(date +%s) - start )) s" >&2
  # Every completion valid; refusals listed (each names its keyword); at least 150 schemas served.
  node "$here/validate.mjs" --results "$work/results-$name.jsonl" --cases "$work/cases/CASES.jsonl" \
    --min-stop 250 | grep -v "^  [^ ].*#[0-9]: line" || status=1
  python3 - "$work/results-$name.jsonl" <<'PY' || status=1
import json, sys
served, refused = set(), set()
for line in open(sys.argv[1]):
    r = json.loads(line)
    schema = str(r.get("id", "")).split("#")[0]
    if schema.endswith(".json") and not schema.startswith(("regex:", "choice:", "unsupported:")):
        (refused if "error" in r else served).add(schema)
print(f"   {len(served)} schemas served, {len(refused)} refused by name")
sys.exit(0 if len(served) >= 150 else 1)
PY
done
exit $status
