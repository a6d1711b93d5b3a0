#!/usr/bin/env bash
# llaisys-bench refuses out-of-range arguments with a message naming the option, before it
# generates a model or measures anything (a --prompt-tokens below the decode's 16-token prompt
# once indexed past the end of the prompt).
set -u
bench="$1"
failures=0

expect_refused() {
  local option="$1"
  shift
  local output
  output="$("$bench" "$@" 2>&1)"
  local rc=$?
  if [[ $rc -eq 0 ]]; then
    echo "FAIL: '$*' was accepted"
    failures=$((failures + 1))
  elif [[ "$output" != *"$option"*"not in range"* ]]; then
    echo "FAIL: '$*' exited $rc without naming $option: $output"
    failures=$((failures + 1))
  else
    echo "ok: '$*' refused ($option)"
  fi
}

expect_refused --prompt-tokens model --prompt-tokens 8
expect_refused --threads model --threads 0
expect_refused --decode-tokens model --decode-tokens 0
expect_refused --copy-mib model --copy-mib 0
expect_refused --concurrency engine --concurrency 0
expect_refused --new-tokens engine --new-tokens -1
expect_refused --kv-cache-mb engine --kv-cache-mb 0
expect_refused --questions engine --questions 0
expect_refused --threads memcpy --threads 0
expect_refused --mb memcpy --mb 0

# In range, the copy benchmark runs and reports a bandwidth.
output="$("$bench" memcpy --mb 8 --repeats 2 --threads 1 2>&1)"
if [[ "$output" =~ memcpy:\ 8\ MiB,\ 1\ thread\(s\):\ [0-9.]+\ GB/s ]]; then
  echo "ok: memcpy in range: $output"
else
  echo "FAIL: memcpy in range printed: $output"
  failures=$((failures + 1))
fi
exit $((failures > 0))
