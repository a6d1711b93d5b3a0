#!/usr/bin/env bash
# The GPU checklist of docs/CUDA.md, run from a bundle made by scripts/gpu-bundle.sh, on the GPU
# machine. Every step has a time limit inside one overall budget, so the logs always come back.
#
#   run-on-gpu.sh [--repo DIR] [--logs DIR] [--budget SECONDS] [PHASE...]
#
# PHASE: tests (kernel, decoder-op and tiny-model tests), bench (llaisys-bench cuda and the
# transformers baselines), server (llaisys-server --device cuda under tools/server_smoke.py), sanitize (compute-sanitizer's four tools on the kernel and decoder-op
# tests, in parallel), checks (tests and sanitize at once), big (the qwen2-7b shape: ~15 GB
# generated), profile (ncu: kernel time per decode pass), hfref (transformers' bf16 logits of the
# qwen2-0.5b shape for the reference cases).
# Default: bench checks (benchmarks first, while nothing else uses the GPU). SKIP_HF=1 leaves out
# transformers' throughput run (40 s on an H100) when a session has measured it already.
# --repo: the checkout (tests/data); default: the bundle's parent. --logs: default $OUT/gpu-logs
# when $OUT is set, else ./gpu-logs. The last lines printed are a summary table; the logs are also
# packed into LOGS.tar.gz.
set -uo pipefail
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$bundle/.." && pwd)
logs=""
budget=480
phases=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repo) repo=$2; shift 2 ;;
    --logs) logs=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    *) phases+=("$1"); shift ;;
  esac
done
[[ ${#phases[@]} -gt 0 ]] || phases=(bench checks)
if [[ -z $logs ]]; then logs=${OUT:+$OUT/gpu-logs}; logs=${logs:-$PWD/gpu-logs}; fi
mkdir -p "$logs"
deadline=$(( $(date +%s) + budget ))
summary="$logs/summary.txt"
: > "$summary"

# cuBLASLt is the GPU machine's own (the toolkit's, or the one PyTorch's wheels carry).
cublas=$(find /usr/local/cuda*/lib* /usr/local/cuda*/targets/*/lib /usr/lib/x86_64-linux-gnu /opt \
           -name 'libcublasLt.so.13*' 2>/dev/null | head -1)
libpath="$bundle/lib"
[[ -n $cublas ]] && libpath="$libpath:$(dirname "$cublas")"
export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LLAISYS_TEST_DATA_DIR="$repo/tests/data" LLAISYS_SOURCE_DIR="$repo" LLAISYS_BINARY_DIR="$bundle"
export LLAISYS_PLUGIN_DIR="$bundle/lib/llaisys/plugins"
models=${LLAISYS_GPU_MODELS:-/tmp/llaisys-models}
mkdir -p "$models"
bin="$bundle/bin"

# step NAME LIMIT COMMAND...: runs COMMAND with its output in LOGS/NAME.log, within LIMIT seconds
# and what is left of the budget; one summary line.
step() {
  local name=$1 limit=$2; shift 2
  local left=$(( deadline - $(date +%s) ))
  if (( left < 10 )); then printf '%-28s %6s %7s\n' "$name" skip "-" >> "$summary"; return; fi
  (( limit > left )) && limit=$left
  local t0=$(date +%s%N)
  timeout -k 5 "$limit" "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  local secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  (( rc == 124 || rc == 137 )) && rc="time"
  printf '%-28s %6s %7s\n' "$name" "$rc" "$secs" >> "$summary"
}
# sanitizer_args TOOL: compute-sanitizer's arguments for TOOL (a step runs an external command).
sanitizer_args() {
  local extra=()
  [[ $1 == memcheck ]] && extra=(--leak-check full)
  [[ $1 == racecheck ]] && extra=(--racecheck-report all)
  echo --tool "$1" "${extra[@]}" --error-exitcode 1
}
sanitizer=$(command -v compute-sanitizer || find /usr/local /opt -name compute-sanitizer -type f 2>/dev/null | head -1)

run_tests() {
  step kernels 120 "$bin/test_cuda_kernels" --durations yes
  step decoder_ops 120 "$bin/test_cuda_decoder_ops" --durations yes
  step qwen2 180 "$bin/test_cuda_qwen2" --durations yes
  step architectures 180 "$bin/test_cuda_architectures" --durations yes
}
run_sanitizers() {  # eight processes share the GPU; each tool's verdict is its own log
  local pids=() prog tool
  for prog in test_cuda_kernels test_cuda_decoder_ops; do
    for tool in memcheck racecheck synccheck initcheck; do
      # shellcheck disable=SC2046
      step "san_${tool}_${prog#test_cuda_}" 400 "${sanitizer:-compute-sanitizer}" $(sanitizer_args "$tool") "$bin/$prog" &
      pids+=($!)
    done
  done
  wait "${pids[@]}"
  # shellcheck disable=SC2046
  step san_memcheck_qwen2 200 "${sanitizer:-compute-sanitizer}" $(sanitizer_args memcheck) "$bin/test_cuda_qwen2"
}

{
  cat "$bundle/MANIFEST"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.memory --format=csv
  echo "cuBLASLt: ${cublas:-not found}"
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' 2>&1
  echo "--- ldd (anything not found?)"
  for f in "$bin"/* "$bundle"/lib/llaisys/plugins/*.so; do ldd "$f" | grep -H --label="$f" "not found"; done
  echo "--- done"
} > "$logs/environment.log" 2>&1

for phase in "${phases[@]}"; do
  case "$phase" in
    tests) run_tests ;;
    bench)
      # Decode passes are replayed from CUDA graphs by default; *_nographs launches them one by one.
      step bench_decode_0.5b 150 "$bin/llaisys-bench" cuda --scenario decode --shape qwen2-0.5b --cache-dir "$models"
      step bench_decode_0.5b_nographs 150 "$bin/llaisys-bench" cuda --scenario decode --shape qwen2-0.5b \
        --cache-dir "$models" --options '{"device": "cuda", "cuda_graphs": "off"}'
      step bench_tput_128x128 150 "$bin/llaisys-bench" cuda --scenario throughput --shape qwen2-0.5b \
        --cache-dir "$models" --sequences 256 --min-len 128 --max-len 128
      [[ -n ${SKIP_HF:-} ]] || step hf_tput_128x128 150 python3 "$bundle/tools/hf_throughput.py" --model "$models/bench-qwen2-0.5b" \
        --batch 256 --input-len 128 --output-len 128
      step bench_tput_nano 180 "$bin/llaisys-bench" cuda --scenario throughput --shape qwen2-0.5b --cache-dir "$models"
      ;;
    big)
      step bench_decode_7b 300 "$bin/llaisys-bench" cuda --scenario decode --shape qwen2-7b --cache-dir "$models"
      step bench_decode_7b_nographs 300 "$bin/llaisys-bench" cuda --scenario decode --shape qwen2-7b --cache-dir "$models" \
        --options '{"device": "cuda", "cuda_graphs": "off"}'
      ;;
    profile)
      # Kernel time of decode passes (ncu, clocks left alone): skip the warm-up and prefill launches,
      # then time NCU_PASSES decode passes' worth. Against the wall time per token of the bench, the
      # rest is host work and launch gaps.
      profiler=$(command -v ncu || find /usr/local /opt -name ncu -type f 2>/dev/null | head -1)
      for shape in qwen2-0.5b qwen2-7b; do
        step "ncu_decode_$shape" 240 "${profiler:-ncu}" --clock-control none --launch-skip 2400 \
          --launch-count 600 --metrics gpu__time_duration.sum --csv --page raw \
          "$bin/llaisys-bench" cuda --scenario decode --shape "$shape" --cache-dir "$models" --decode-tokens 16 \
          --copy-mib 64 --options '{"device": "cuda", "cuda_graphs": "off"}'
        python3 "$bundle/tools/ncu_summary.py" "$logs/ncu_decode_$shape.log" \
          > "$logs/ncu_summary_$shape.log" 2>&1
      done
      ;;
    hfref)
      # transformers' float32 and bfloat16 logits for the tiny-qwen2 prompts on the large shapes, then
      # the hidden [hf] case of test_cuda_qwen2: ours no further from f32 than transformers' bf16.
      for shape in qwen2-0.5b qwen2-7b; do
        dir="$models/bench-$shape"
        [[ -f $dir/config.json ]] || step "mkmodel_$shape" 120 "$bin/llaisys-mkmodel" --shape "$shape" --no-tokenizer "$dir"
        for dtype in float32 bfloat16; do
          step "hfref_${shape}_$dtype" 150 python3 "$bundle/tools/hf_reference.py" --model "$dir" \
            --cases "$repo/tests/data/tiny-qwen2/reference.json" --dtype "$dtype" --out "$logs/hfref-$shape-$dtype.json"
        done
        step "hf_parity_$shape" 150 env LLAISYS_HF_MODEL="$dir" LLAISYS_HF_REFERENCE_F32="$logs/hfref-$shape-float32.json" \
          LLAISYS_HF_REFERENCE_BF16="$logs/hfref-$shape-bfloat16.json" "$bin/test_cuda_qwen2" "[hf]" --durations yes
      done
      ;;
    server)
      # llaisys-server on the GPU under concurrent, streamed, dropped and malformed requests
      # (tools/server_smoke.py; node, which the e2e suites need, is not on these machines).
      dir="$models/tiny-qwen2"
      [[ -f $dir/config.json ]] || "$bin/llaisys-mkmodel" --tokenizer-dir "$repo/tests/data/qwen2-tokenizer" "$dir" > /dev/null
      "$bin/llaisys-server" --port 18181 --device cuda --model "tiny=$dir" > "$logs/server.log" 2>&1 &
      server_pid=$!
      step server_smoke 150 python3 "$bundle/tools/server_smoke.py" --url http://127.0.0.1:18181 --model tiny
      kill -TERM "$server_pid" 2>/dev/null
      wait "$server_pid"
      echo "server exit status after SIGTERM: $?" >> "$logs/server.log"
      ;;
    sanitize) run_sanitizers ;;
    checks)  # the tests in the foreground while the sanitizers run beside them (not with bench)
      run_sanitizers & san=$!
      run_tests
      wait $san
      ;;
    *) echo "run-on-gpu.sh: unknown phase $phase" >&2 ;;
  esac
done

tar -C "$(dirname "$logs")" -czf "$logs.tar.gz" "$(basename "$logs")" 2>/dev/null
echo "== environment"; head -12 "$logs/environment.log"
for f in "$logs"/bench_*.log "$logs"/hf_*.log "$logs"/ncu_summary_*.log; do
  [[ -f $f ]] && { echo "== $(basename "$f")"; grep -Ev '^\s*$' "$f" | tail -6; }
done
for f in "$logs"/*.log; do
  case $(basename "$f") in environment.log|bench_*|hf_*|ncu_*) continue ;; esac
  echo "== $(basename "$f")"; grep -E "test cases|assertions|ERROR SUMMARY|FAILED|error|Error|PASSED" "$f" | head -6
  # Where a sanitizer's reports come from: kernel (offset dropped) and count.
  grep -E "^=========     at " "$f" | sed -E 's/^=========     at //; s/\+0x[0-9a-f]+$//' | cut -c1-110 | sort | uniq -c | sort -rn | head -5
done
printf '%-28s %6s %7s\n' step rc seconds
cat "$summary"
