#!/usr/bin/env bash
# Runs the web UI acceptance tests (tests/browser/specs/*.test.mjs): Debian's chromium, driven by
# playwright-core, against a real llaisys-server that this script starts on a free loopback port
# with the tiny Qwen2 and the mock model, then stops.
#
#   tests/browser/run.sh BUILD_DIR [extra node --test arguments]
#   e.g. tests/browser/run.sh build/default --test-name-pattern=stop
#
# Screenshots (desktop and phone width) and the server log go to BUILD_DIR/test-artifacts/browser/.
# With LLAISYS_SERVER_URL already set, no server is started: the specs run against that server,
# which must serve the models named by LLAISYS_TEST_QWEN2_MODEL and LLAISYS_TEST_MOCK_MODEL (and
# LLAISYS_API_KEY, LLAISYS_TEST_MOCK_CONTEXT, LLAISYS_TEST_CAPACITY as below when they differ; the
# mock answering LLAISYS_TEST_THINK_PROMPT with a <think> block, split off as reasoning_content).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:?usage: tests/browser/run.sh BUILD_DIR [node --test args]}" && pwd)
shift

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "browser tests: node >= 20 is needed (playwright-core), found $(node --version)" >&2
  exit 1
fi
if [ ! -d "$here/node_modules/playwright-core" ]; then
  echo "browser tests: playwright-core is missing; run scripts/install-deps.sh" >&2
  exit 1
fi
if [ ! -x "${LLAISYS_CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "browser tests: ${LLAISYS_CHROMIUM:-/usr/bin/chromium} not found; run scripts/install-deps.sh (Debian package chromium)" >&2
  exit 1
fi

artifacts=$build/test-artifacts/browser
rm -rf "$artifacts"
mkdir -p "$artifacts"
export LLAISYS_TEST_ARTIFACTS=$artifacts

work=$(mktemp -d "${TMPDIR:-/tmp}/llaisys-browser-tests.XXXXXX")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

if [ -z "${LLAISYS_SERVER_URL:-}" ]; then
  bin=$build/bin
  for program in llaisys-server llaisys-mkmodel llaisys-offline; do
    if [ ! -x "$bin/$program" ]; then
      echo "browser tests: $bin/$program is not built" >&2
      exit 1
    fi
  done
  if [ ! -f "$build/share/llaisys/webui/index.html" ]; then
    echo "browser tests: the web UI is not built ($build/share/llaisys/webui); is node/npm installed?" >&2
    exit 1
  fi

  # The two models. The tiny Qwen2 has random weights (its text is noise, which is all the UI
  # tests need); the mock model is slowed down per step and never stops early, so an answer can be
  # watched growing and stopped in the middle; its short context makes context_length easy to hit.
  # Asked the thinking prompt, the mock answers the scripted reply instead: a <think> block, then
  # the answer (the server, run with --reasoning-format deepseek, streams the block as
  # reasoning_content). Both texts are tokenized here, with the tokenizer the mock shares.
  "$bin/llaisys-mkmodel" --shape tiny --seed 7 "$work/tiny-qwen2" >"$artifacts/mkmodel.log" 2>&1
  mkdir -p "$work/mock"
  cp "$work"/tiny-qwen2/tokenizer* "$work/mock/" 2>/dev/null || true
  export LLAISYS_TEST_THINK_PROMPT="Think it through: what is the answer to everything?"
  think_reply=$'<think>\nLet me think step by step about this. The question is the famous one from the book, where a great computer thought about it for a very long time. Its answer was a single number, so I will give that number and say where it comes from.\n</think>\n\nThe answer is **42**, as the computer Deep Thought found.'
  node -e 'for (const text of process.argv.slice(1)) console.log(JSON.stringify({ text }))' "$LLAISYS_TEST_THINK_PROMPT" "$think_reply" \
    | "$bin/llaisys-offline" tokenize --model "$work/tiny-qwen2" >"$work/think-ids.jsonl"
  node -e '
    const fs = require("fs");
    const [tinyDir, mockDir, idsFile] = process.argv.slice(1);
    const tiny = JSON.parse(fs.readFileSync(`${tinyDir}/config.json`, "utf8"));
    const [prompt, reply] = fs.readFileSync(idsFile, "utf8").trim().split("\n").map((line) => JSON.parse(line).ids);
    fs.writeFileSync(`${mockDir}/config.json`, JSON.stringify({
      architectures: ["LlaisysMockForCausalLM"], model_type: "llaisys-mock",
      vocab_size: tiny.vocab_size, hidden_size: 64, max_position_embeddings: 1024,
      eos_token_id: tiny.eos_token_id, bos_token_id: tiny.bos_token_id,
      mock: { delay_ms_per_step: 40, eos_period: 0, replies: [{ when_prompt_contains: prompt, ids: reply }] },
    }, null, 2));
  ' "$work/tiny-qwen2" "$work/mock" "$work/think-ids.jsonl"

  port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
  api_key="browser-test-key-$RANDOM$RANDOM"
  export LLAISYS_SERVER_URL="http://127.0.0.1:$port"
  export LLAISYS_API_KEY=$api_key
  export LLAISYS_TEST_QWEN2_MODEL=tiny-qwen2
  export LLAISYS_TEST_MOCK_MODEL=mock
  export LLAISYS_TEST_MOCK_CONTEXT=1024
  export LLAISYS_TEST_CAPACITY=4 # running + queued requests the server accepts before 429/503

  # ==============================================================================================
  # The server's command line (final; docs/SERVER.md). It
  #   - listens on 127.0.0.1:$port and serves the web UI from $build/share/llaisys/webui at / (the
  #     default --webui, found next to the executable);
  #   - serves $work/tiny-qwen2 as model id "tiny-qwen2" and $work/mock as "mock";
  #   - requires $api_key (Authorization: Bearer or x-api-key) on /v1/chat/completions and the other
  #     API routes (GET /health, GET /v1/models, GET /metrics and the web UI are public);
  #   - accepts $LLAISYS_TEST_CAPACITY = 2 running + 2 queued requests per model at once, answering
  #     429 with Retry-After beyond that;
  #   - sends a leading <think>...</think> block of an answer as reasoning_content.
  server_command=(
    "$bin/llaisys-server"
    --host 127.0.0.1 --port "$port"
    --model "tiny-qwen2=$work/tiny-qwen2"
    --model "mock=$work/mock"
    --api-key "$api_key"
    --max-running-requests 2 --max-queued-requests 2
    --reasoning-format deepseek
  )
  # ==============================================================================================

  "${server_command[@]}" >"$artifacts/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 600); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "browser tests: llaisys-server exited while starting; its log:" >&2
      cat "$artifacts/server.log" >&2
      exit 1
    fi
    if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))' "$LLAISYS_SERVER_URL/ready"; then
      break
    fi
    sleep 0.1
  done
fi

: "${LLAISYS_TEST_QWEN2_MODEL:?set LLAISYS_TEST_QWEN2_MODEL to the tiny Qwen2 model id}"
: "${LLAISYS_TEST_MOCK_MODEL:?set LLAISYS_TEST_MOCK_MODEL to the mock model id}"
echo "browser tests: server $LLAISYS_SERVER_URL, artifacts in $artifacts" >&2
cd "$here"
node --test --test-concurrency=1 "$@" specs/
